#!/usr/bin/env bash
# Builds the .deb of a build folder with cpack into a temporary folder and checks it with
# dpkg-deb: every file a /usr install must have (common.sh), nothing under /usr/local, the
# conffiles, the Slurm release it depends on, library dependencies from dpkg-shlibdeps; then runs
# the packaged (stripped) autoheal.
#
#   deb_test.sh BUILD_DIR SOURCE_DIR SLURM_PLUGIN_DIR SLURM_PLUGSTACK_DIR VERSION CUDA(0|1)
#               SLURM_VERSION (x.y.z, from slurm_version.h)
set -euo pipefail
build=$1 source=$2 plugin_dir=$3 plugstack_dir=$4 version=$5 cuda=$6 slurm_version=$7

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out=$(mktemp -d /tmp/autoheal-deb-test.XXXXXX)
trap 'rm -rf "$out"' EXIT

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out" >"$out/cpack.log" 2>&1 \
    || { cat "$out/cpack.log" >&2; fail "cpack failed"; finish "deb test" ""; }
deb=$out/autoheal_${version}_amd64.deb
[ -f "$deb" ] || { fail "no $(basename "$deb"); cpack made: $(ls "$out")"; finish "deb test" ""; }

listing=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's#^\./##')
while read -r path; do
    grep -qxF -- "$path" <<<"$listing" || fail "not in the package: /$path"
done < <(expected_paths)
! grep -q '^usr/local/' <<<"$listing" || fail "files under /usr/local: $(grep '^usr/local/' <<<"$listing")"

conffiles=$(dpkg-deb -I "$deb" conffiles)
while read -r path; do
    grep -qxF -- "$path" <<<"$conffiles" || fail "not a conffile: $path"
    grep -qxF -- "${path#/}" <<<"$listing" || fail "conffile not in the package: $path"
done < <(expected_conffiles)

control=$(dpkg-deb -f "$deb" Package Version Architecture Depends)
expect_in "control" "$control" "Package: autoheal"
expect_in "control" "$control" "Version: $version"
expect_in "control" "$control" "Architecture: amd64"
IFS=. read -r major minor micro <<<"$slurm_version"
depends=$(dpkg-deb -f "$deb" Depends)
expect_in "Depends" "$depends" "slurm-wlm-basic-plugins (>= $slurm_version)"
expect_in "Depends" "$depends" "slurm-wlm-basic-plugins (<< $major.$minor.$((micro + 1))~)"
# From dpkg-shlibdeps: the programs link libslurm, the rules need yaml-cpp.
expect_in "Depends" "$depends" "libslurm"
expect_in "Depends" "$depends" "libyaml-cpp"

dpkg-deb -x "$deb" "$out/root"
got=$("$out/root/usr/bin/autoheal" version) || fail "packaged autoheal version exited $?"
[ "$got" = "autoheal $version" ] || fail "packaged autoheal version printed '$got'"
got=$("$out/root/usr/bin/autoheal" config check "$out/root/etc/autoheal/autoheal.yaml") \
    || fail "packaged autoheal config check: $got"

finish "deb test" "$(wc -l <<<"$listing") entries, Depends: $depends"
