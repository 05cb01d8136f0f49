#!/usr/bin/env bash
# A Debian root per Slurm release, to build and test autoheal against the Slurm that release
# ships (a job_submit plugin loads only into the exact Slurm it was built for, a SPANK plugin into
# its major.minor, and libslurm's soname changes every release). The host's Debian 12 gives 22.05.
#
#   scripts/slurm-root.sh RELEASE              build the root once (idempotent), print its folder
#   scripts/slurm-root.sh RELEASE run CMD...   run CMD inside it, as root, with this repository
#                                              (and ../shared, read-only) at its own path, /proc,
#                                              /dev and /sys mounted
#   scripts/slurm-root.sh --releases           print the releases it knows, one a line
#
# RELEASE: 24.11 (Debian 13 trixie) or 26.05 (Debian unstable sid). A root is
# `debootstrap --variant=minbase` of that suite with Slurm, munge and the project's build
# dependencies (scripts/deps.sh run inside it, which also fetches and configures the matching
# Slurm source with `apt-get source`). Roots are cached outside the build folder, in
# ${AUTOHEAL_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/autoheal}/roots/RELEASE.
#
# SLURM_SOURCE_GIT=/path/to/slurm.git: where the Slurm source comes from when the mirror serves no
# source package (scripts/deps.sh); it is visible read-only inside the root at the same path.
#
# `run` mounts in a private mount namespace of its own (unshare): the mounts vanish with it,
# whatever way the command ends, and the host never sees them.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_dir=${AUTOHEAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autoheal}
mirror=${AUTOHEAL_DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { printf 'autoheal: slurm-root: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

suite_of() {
    case "$1" in
        24.11) echo trixie ;;
        26.05) echo sid ;;
        *) die "unknown Slurm release '$1' (known: 24.11, 26.05; the host gives 22.05)" ;;
    esac
}

# The environment a command inside the root gets: nothing of the host's but the terminal, the
# source clone and the test cluster's and CTest's settings (AUTOHEAL_CLUSTER_*, CTEST_*).
chroot_env=(env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    LANG=C.UTF-8 TERM="${TERM:-dumb}" SLURM_SOURCE_GIT="${SLURM_SOURCE_GIT:-}")
for var in $(compgen -e); do
    case "$var" in AUTOHEAL_CLUSTER_* | CTEST_*) chroot_env+=("$var=${!var}") ;; esac
done

# in_root DIR CMD...: CMD inside DIR with /proc, /dev, /sys and the repository mounted, in a
# private mount namespace (so nothing stays mounted once it exits, even when it is killed).
in_root() {
    local dir=$1
    shift
    [ "$(id -u)" -eq 0 ] || die "must run as root (chroot and mounts)"
    # The project's shared folder beside the checkout (../shared: the data some tests read),
    # read-only at the path the repository sees it at (where ../shared is a link, at the link's
    # path: the link's target is not inside the root).
    local shared=""
    [ -d "$repo_root/../shared" ] && shared=$(cd "$repo_root/.." && pwd)/shared
    unshare --mount --propagation private -- bash -euc '
        dir=$1 repo=$2 git=$3 shared=$4; shift 4
        mount -t proc proc "$dir/proc"
        mount --rbind /sys "$dir/sys"
        mount --rbind /dev "$dir/dev"
        mkdir -p "$dir$repo"
        mount --bind "$repo" "$dir$repo"
        for ro in "$git" "$shared"; do
            [ -n "$ro" ] || continue
            mkdir -p "$dir$ro"
            mount --bind "$ro" "$dir$ro"
            mount -o remount,bind,ro "$dir$ro"
        done
        # /etc/resolv.conf for apt inside the root; the host name the cluster uses is the same.
        cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
        exec chroot "$dir" "$@"
    ' in_root "$dir" "$repo_root" "${SLURM_SOURCE_GIT:-}" "$shared" "${chroot_env[@]}" "$@"
}

build_root() {
    local release=$1 suite dir packages
    suite=$(suite_of "$release")
    dir="$cache_dir/roots/$release"
    if [ -f "$dir/.autoheal-root-ready" ]; then
        printf '%s\n' "$dir"
        return 0
    fi
    command -v debootstrap >/dev/null || die "debootstrap is missing: run scripts/deps.sh"
    local start=$SECONDS
    # A half-built root from an interrupted run is rebuilt from scratch.
    if [ ! -f "$dir/.autoheal-debootstrapped" ]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        log "debootstrap $suite into $dir (once)"
        debootstrap --variant=minbase \
            --include=slurmctld,slurmd,slurm-client,libslurm-dev,munge "$suite" "$dir" "$mirror" \
            >"$dir.debootstrap.log" 2>&1 \
            || die "debootstrap $suite failed; see $dir.debootstrap.log"
        touch "$dir/.autoheal-debootstrapped"
        log "debootstrap $suite: $((SECONDS - start)) s"
    fi
    echo "$release" >"$dir/etc/autoheal-slurm-root"
    # A mirror that serves a snapshot (or a clock ahead of it) has sid's short-lived Release
    # files past their Valid-Until: the packages are still what the root was built from.
    echo 'Acquire::Check-Valid-Until "false";' >"$dir/etc/apt/apt.conf.d/99autoheal-root"
    # Daemons are started by hand (tests/cluster); a package's postinst must not try.
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod 755 "$dir/usr/sbin/policy-rc.d"
    local step=$SECONDS
    log "installing the build dependencies and the Slurm source inside the $release root"
    in_root "$dir" "$repo_root/scripts/deps.sh" || die "scripts/deps.sh failed inside $dir"
    log "dependencies and Slurm source: $((SECONDS - step)) s"
    local version
    version=$(in_root "$dir" slurmctld -V | awk '{print $2}')
    case "$version" in
        "$release".*) ;;
        *) die "the $suite root has Slurm '$version', expected $release.x" ;;
    esac
    touch "$dir/.autoheal-root-ready"
    log "root for Slurm $version ready in $((SECONDS - start)) s: $dir"
    printf '%s\n' "$dir"
}

case "${1:-}" in
    --releases)
        printf '%s\n' 24.11 26.05
        ;;
    "" | -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        ;;
    *)
        release=$1
        suite_of "$release" >/dev/null
        if [ "${2:-}" = run ]; then
            shift 2
            [ $# -gt 0 ] || die "run: no command"
            dir=$(build_root "$release")
            in_root "$dir" "$@"
        else
            [ $# -eq 1 ] || die "usage: $0 RELEASE [run CMD...]"
            build_root "$release"
        fi
        ;;
esac
