#!/usr/bin/env bash
# Installs what autoheal needs from Debian's packages and prepares the matching Slurm source tree
# for the job_submit plugin. Idempotent and quiet when everything is already there.
#
#   scripts/deps.sh            packages + Slurm source (cached outside the build folder)
#   scripts/deps.sh --print-slurm-src   print the configured source folder and exit
#
# SLURM_SRC_DIR=/path/to/configured/slurm  use a site's own configured Slurm source instead.
# AUTOHEAL_CACHE_DIR=...                   where the Slurm source is cached
#                                          (default: ${XDG_CACHE_HOME:-$HOME/.cache}/autoheal)
set -euo pipefail

packages=(
    slurmctld slurmd slurm-client libslurm-dev munge
    cmake g++ make pkg-config dpkg-dev valgrind
    libyaml-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
    libgtest-dev libgmock-dev
    libsqlite3-dev sqlite3 libcurl4-openssl-dev
    libre2-dev libhyperscan-dev ripgrep clang libclang-rt-14-dev
    python3
    chromium  # headless, for the page test of `autoheal report --html`
    python3-jsonschema python3-yaml
)

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

# Adds a deb-src entry mirroring the system's bookworm sources (same URIs and keyring).
ensure_deb_src() {
    local src=/etc/apt/sources.list.d/autoheal-deb-src.sources
    if apt-cache showsrc slurm-wlm >/dev/null 2>&1 \
        && apt-cache showsrc slurm-wlm 2>/dev/null | grep -q '^Package: slurm-wlm'; then
        return 0
    fi
    if [ ! -f "$src" ]; then
        log "adding deb-src for bookworm: $src"
        as_root tee "$src" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    fi
    apt_updated=0
    apt_update_once
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
    ensure_deb_src
    log "fetching and configuring Slurm $version source into $dir (once)"
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    (
        cd "$dir.tmp"
        apt-get source -qq --download-only "slurm-wlm=$(dpkg-query -W -f='${Version}' libslurm-dev)" >/dev/null 2>&1 \
            || apt-get source -qq --download-only slurm-wlm >/dev/null
        dpkg-source -x --no-check ./*.dsc tree >/dev/null
        cd tree
        ./configure --prefix=/usr --sysconfdir=/etc/slurm --libdir=/usr/lib/x86_64-linux-gnu \
            --enable-multiple-slurmd --disable-debug >configure.log 2>&1 \
            || { log "Slurm ./configure failed; see $dir.tmp/tree/configure.log"; exit 1; }
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
    "")
        install_packages
        prepare_slurm_source >/dev/null
        ;;
    *)
        echo "usage: $0 [--print-slurm-src]" >&2
        exit 2
        ;;
esac
