#!/usr/bin/env bash
# Stages `cmake --install` of a build folder into a temporary DESTDIR and checks the tree a
# cluster would get: programs, plugins, the CUDA module (when built), config and every shipped
# rule, the plugstack.conf.d snippet, the state and log folders; then runs the staged `autoheal`
# on the staged files. A second install with another prefix checks that the programs find their
# config and rules beside themselves.
#
#   install_test.sh BUILD_DIR SOURCE_DIR SLURM_PLUGIN_DIR SLURM_PLUGSTACK_DIR VERSION CUDA(0|1)
set -euo pipefail
build=$1 source=$2 plugin_dir=$3 plugstack_dir=$4 version=$5 cuda=$6

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
stage=$(mktemp -d /tmp/autoheal-install-test.XXXXXX)
trap 'rm -rf "$stage"' EXIT

# --- prefix /usr, as a package would have it
usr=$stage/usr-root
DESTDIR=$usr cmake --install "$build" --prefix /usr >/dev/null
while read -r path; do
    case $path in
        */) [ -d "$usr/$path" ] || fail "missing folder /$path" ;;
        usr/bin/* | usr/sbin/*) [ -f "$usr/$path" ] && [ -x "$usr/$path" ] \
            || fail "missing program /$path" ;;
        *) [ -f "$usr/$path" ] || fail "missing file /$path" ;;
    esac
done < <(expected_paths)
[ "$cuda" = 1 ] || [ ! -e "$usr/usr/lib/autoheal" ] \
    || fail "usr/lib/autoheal installed without a CUDA module"
cmp -s "$source/etc/autoheal.yaml" "$usr/etc/autoheal/autoheal.yaml" \
    || fail "etc/autoheal/autoheal.yaml differs from the source's"
rules=$(expected_paths | grep -c '^etc/autoheal/rules.d/') || fail "no shipped rules"
snippet=$usr$plugstack_dir/autoheal.conf
[ -f "$snippet" ] && expect_in "plugstack snippet" "$(grep -v '^#' "$snippet")" \
    "required $plugin_dir/spank_autoheal.so"
unit=$usr/lib/systemd/system/autoheal-agent.service
[ -f "$unit" ] && expect_in "agent unit" "$(cat "$unit")" "ExecStart=/usr/sbin/autoheal-agent"
# Nothing outside the stage: every file the install recorded (install_manifest.txt names them
# without DESTDIR) is under DESTDIR.
# (The manifest has no newline after its last line.)
while read -r installed || [ -n "$installed" ]; do
    [ -e "$usr$installed" ] || fail "installed outside DESTDIR: $installed"
done <"$build/install_manifest.txt"
# Every library the staged programs and plugins need resolves on this machine.
for f in "$usr"/usr/bin/* "$usr"/usr/sbin/* "$usr$plugin_dir"/*.so; do
    [ -f "$f" ] || continue
    missing=$(ldd "$f" 2>&1 | grep 'not found' || true)
    [ -z "$missing" ] || fail "${f#"$usr"}: $missing"
done

# --- the staged CLI on the staged files
ah=$usr/usr/bin/autoheal
if [ -x "$ah" ]; then
    out=$("$ah" version) || fail "autoheal version exited $?"
    [ "$out" = "autoheal $version" ] || fail "autoheal version printed '$out'"
    out=$("$ah" rules check "$usr/etc/autoheal/rules.d") || fail "rules check exited $?: $out"
    expect_in "rules check" "$out" "$usr/etc/autoheal/rules.d/10-gpu.yaml: Ok"
    out=$("$ah" config check "$usr/etc/autoheal/autoheal.yaml") || fail "config check: $out"
    expect_in "config check" "$out" "$usr/etc/autoheal/autoheal.yaml: Ok"
    out=$("$ah" config print-slurm 2>/dev/null) || fail "config print-slurm exited $?"
    expect_in "print-slurm" "$out" "Prolog=$usr/usr/sbin/autoheal-prolog"
    expect_in "print-slurm" "$out" "EpilogSlurmctld=$usr/usr/sbin/autoheal-epilog-ctld"
    expect_in "print-slurm" "$out" "required $plugin_dir/spank_autoheal.so"
fi

# --- another prefix: config and rules under it, found by the programs without any setting
opt=$stage/opt-root
DESTDIR=$opt cmake --install "$build" --prefix /opt/autoheal >/dev/null
for f in etc/autoheal/autoheal.yaml etc/autoheal/rules.d/10-gpu.yaml bin/autoheal; do
    [ -f "$opt/opt/autoheal/$f" ] || fail "prefix /opt/autoheal: missing /opt/autoheal/$f"
done
[ ! -e "$opt/etc/autoheal" ] || fail "prefix /opt/autoheal also wrote /etc/autoheal"
ah=$opt/opt/autoheal/bin/autoheal
if [ -x "$ah" ]; then
    out=$(env -u AUTOHEAL_CONFIG "$ah" config check) || fail "config check (default file): $out"
    expect_in "config check (default file)" "$out" "$opt/opt/autoheal/etc/autoheal/autoheal.yaml: Ok"
    out=$(echo 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus.' \
        | env -u AUTOHEAL_RULES_DIR "$ah" classify --json) || fail "classify exited $?"
    expect_in "classify with the prefix's rules" "$out" '"rule":"xid-79-fallen-off-bus"'
fi

finish "install test" "$rules rule files"
