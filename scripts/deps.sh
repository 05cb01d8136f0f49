#!/usr/bin/env bash
# Installs what autoheal needs from Debian's packages and prepares the matching Slurm source tree
# for the job_submit plugin. Idempotent and quiet when everything is already there.
#
#   scripts/deps.sh            packages + Slurm source (cached outside the build folder)
#   scripts/deps.sh --print-slurm-src   print the configured source folder and exit
#   scripts/deps.sh --print-packages    print the package list (one a line) and exit
#
# Inside a root of another Slurm release (scripts/slurm-root.sh; it holds /etc/autoheal-slurm-root)
# the host-only tools (the fuzzers' clang runtime, the page test's browser) are left out.
#
# SLURM_SRC_DIR=/path/to/configured/slurm  use a site's own configured Slurm source instead.
# AUTOHEAL_CACHE_DIR=...                   where the Slurm source is cached
#                                          (default: ${XDG_CACHE_HOME:-$HOME/.cache}/autoheal)
# SLURM_SOURCE_GIT=/path/to/slurm.git      a clone of SchedMD's repository: the source comes from
#                                          its tag for the installed release when the mirror
#                                          serves no source package (see fetch_slurm_source)
set -euo pipefail

packages=(
    slurmctld slurmd slurm-client libslurm-dev munge
    cmake g++ make pkg-config dpkg-dev file valgrind
    libyaml-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
    libgtest-dev libgmock-dev
    libsqlite3-dev sqlite3 libcurl4-openssl-dev
    libre2-dev libhyperscan-dev ripgrep
    python3 python3-jsonschema python3-yaml
)
# The host's alone: make fuzz and make test-asan (clang and its runtime, named by version), the
# page test of `autoheal report --html` (headless chromium), the roots of the other Slurm
# releases (debootstrap; scripts/slurm-root.sh).
host_packages=(clang libclang-rt-14-dev chromium debootstrap)
# What a minimal root of another release lacks: the local cluster's tools, and what the Slurm
# source's configure needs when it comes from git (SLURM_SOURCE_GIT).
root_packages=(procps hostname iproute2 util-linux passwd git libmunge-dev)
if [ -f /etc/autoheal-slurm-root ]; then
    packages+=("${root_packages[@]}")
else
    packages+=("${host_packages[@]}")
fi

cache_dir=${AUTOHEAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autoheal}

log() { printf 'autoheal: deps: %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing_packages() {
    local p
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' \
            || printf '%s\n' "$p"
    done
}

apt_updated=0
apt_update_once() {
    if [ "$apt_updated" -eq 0 ]; then
        as_root apt-get update -qq >/dev/null
        apt_updated=1
    fi
}

install_packages() {
    local missing
    missing=$(missing_packages)
    [ -z "$missing" ] && return 0
    log "installing: $(echo $missing)"
    apt_update_once
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $missing >/dev/null
}

slurm_version() {
    dpkg-query -W -f='${Version}' libslurm-dev | sed 's/-.*//'
}

# Adds deb-src entries mirroring the system's own binary sources (same URIs, suites and keyring):
# bookworm's on the host, trixie's or sid's inside a root of another release.
ensure_deb_src() {
    local dir=/etc/apt/sources.list.d
    if apt-cache showsrc slurm-wlm 2>/dev/null | grep -q '^Package: slurm-wlm'; then
        return 0
    fi
    if [ ! -f "$dir/autoheal-deb-src.sources" ] && [ ! -f "$dir/autoheal-deb-src.list" ]; then
        local f sources='' list=''
        for f in "$dir"/*.sources; do
            [ -f "$f" ] && sources+="$(sed 's/^Types: *deb$/Types: deb-src/' "$f")"$'\n\n'
        done
        for f in /etc/apt/sources.list "$dir"/*.list; do
            [ -f "$f" ] && list+="$(sed -n 's/^deb \(.*\)$/deb-src \1/p' "$f")"$'\n'
        done
        [ -n "${sources//[[:space:]]/}" ] \
            && printf '%s' "$sources" | as_root tee "$dir/autoheal-deb-src.sources" >/dev/null
        [ -n "${list//[[:space:]]/}" ] \
            && printf '%s' "$list" | as_root tee "$dir/autoheal-deb-src.list" >/dev/null
        log "added deb-src entries mirroring the system's sources in $dir/autoheal-deb-src.*"
    fi
    apt_updated=0
    apt_update_once
}

# fetch_slurm_source VERSION DIR: Debian's source package of the installed Slurm into DIR, or,
# when the mirror serves none and SLURM_SOURCE_GIT names a Slurm clone, its tag for VERSION
# (slurm-M-m-u-1). Without that exact tag, the newest earlier one of the same release is taken
# and the installed public headers are laid over it (DIR/.autoheal-public-headers); micro
# releases keep the internal structures a plugin uses, but that is said in the log.
fetch_slurm_source() {
    local version=$1 out=$2
    ensure_deb_src
    if apt-get source -qq --download-only "slurm-wlm=$(dpkg-query -W -f='${Version}' libslurm-dev)" >/dev/null 2>&1 \
        || apt-get source -qq --download-only slurm-wlm >/dev/null 2>&1; then
        dpkg-source -x --no-check ./*.dsc "$out" >/dev/null
        return 0
    fi
    # A mirror may serve the upstream tarball but not the package's .dsc and Debian changes:
    # apt-get source then fails having fetched the tarball, which is Slurm's own release of that
    # version (Debian's changes are packaging; the job_submit plugin checks the job record's
    # layout when it loads, docs/admin-guide.md).
    local orig='' f
    for f in ./slurm-wlm_"$version".orig.tar.*; do
        [ -f "$f" ] && orig=$f && break
    done
    if [ -n "$orig" ]; then
        log "no Debian source package on the mirror: using the upstream tarball $orig"
        mkdir -p "$out"
        tar -xf "$orig" -C "$out" --strip-components=1
        return 0
    fi
    [ -n "${SLURM_SOURCE_GIT:-}" ] || {
        log "apt-get source slurm-wlm failed (no source package on the mirror?); set SLURM_SOURCE_GIT to a clone of https://github.com/SchedMD/slurm"
        exit 1
    }
    local major_minor=${version%.*} micro=${version##*.} tag='' m
    tag="slurm-${version//./-}-1"
    if ! git -C "$SLURM_SOURCE_GIT" rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
        tag=''
        for m in $(seq "$micro" -1 0); do
            if git -C "$SLURM_SOURCE_GIT" rev-parse -q --verify "refs/tags/slurm-${major_minor//./-}-$m-1" >/dev/null; then
                tag="slurm-${major_minor//./-}-$m-1"
                break
            fi
        done
        [ -n "$tag" ] || { log "$SLURM_SOURCE_GIT has no tag of Slurm $major_minor"; exit 1; }
        log "no tag for Slurm $version in $SLURM_SOURCE_GIT: using $tag with the installed public headers"
    fi
    log "Slurm source from $SLURM_SOURCE_GIT at $tag"
    mkdir -p "$out"
    git -C "$SLURM_SOURCE_GIT" archive "$tag" | tar -x -C "$out"
    [ "$tag" = "slurm-${version//./-}-1" ] || touch "$out/.autoheal-public-headers"
}

# set_config_version CONFIG_H SLURM_VERSION_H: config.h's version lines as the installed
# slurm_version.h has them (both define SLURM_VERSION_NUMBER, which is plugin_version).
set_config_version() {
    local config=$1 header=$2 number major minor micro
    number=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$header")
    major=$(printf '%d' $(((number >> 16) & 255)))
    minor=$(printf '%02d' $(((number >> 8) & 255)))
    micro=$(printf '%d' $((number & 255)))
    sed -i -e "s/^#define SLURM_VERSION_NUMBER .*/#define SLURM_VERSION_NUMBER $number/" \
        -e "s/^#define SLURM_VERSION_STRING .*/#define SLURM_VERSION_STRING \"$major.$minor.$micro\"/" \
        -e "s/^#define SLURM_MICRO .*/#define SLURM_MICRO \"$micro\"/" "$config"
}

# Prints the folder of a configured Slurm source tree matching the installed libslurm-dev.
prepare_slurm_source() {
    if [ -n "${SLURM_SRC_DIR:-}" ]; then
        [ -f "$SLURM_SRC_DIR/config.h" ] && [ -f "$SLURM_SRC_DIR/src/slurmctld/slurmctld.h" ] || {
            log "SLURM_SRC_DIR=$SLURM_SRC_DIR is not a configured Slurm source tree (no config.h or src/slurmctld/slurmctld.h)"
            exit 1
        }
        printf '%s\n' "$SLURM_SRC_DIR"
        return 0
    fi
    local version dir
    version=$(slurm_version)
    dir="$cache_dir/slurm-src-$version"
    if [ -f "$dir/.autoheal-configured" ]; then
        printf '%s\n' "$dir/tree"
        return 0
    fi
    log "fetching and configuring Slurm $version source into $dir (once)"
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    (
        cd "$dir.tmp"
        fetch_slurm_source "$version" tree
        cd tree
        ./configure --prefix=/usr --sysconfdir=/etc/slurm --libdir=/usr/lib/x86_64-linux-gnu \
            --enable-multiple-slurmd --disable-debug >configure.log 2>&1 \
            || { log "Slurm ./configure failed; see $dir.tmp/tree/configure.log"; exit 1; }
        if [ -f .autoheal-public-headers ]; then
            # The installed release's public headers over the tag's (configure wrote its own
            # slurm_version.h): plugin_version and the public structures are the installed ones.
            cp /usr/include/slurm/*.h slurm/
            set_config_version config.h /usr/include/slurm/slurm_version.h
        fi
    )
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
    touch "$dir/.autoheal-configured"
    printf '%s\n' "$dir/tree"
}

case "${1:-}" in
    --print-slurm-src)
        prepare_slurm_source
        ;;
    --print-packages)
        printf '%s\n' "${packages[@]}"
        ;;
    "")
        install_packages
        prepare_slurm_source >/dev/null
        ;;
    *)
        echo "usage: $0 [--print-slurm-src|--print-packages]" >&2
        exit 2
        ;;
esac
