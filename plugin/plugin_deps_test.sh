#!/usr/bin/env bash
# The plugins bring no shared library but libc into the Slurm process that loads them
# (plugin/CMakeLists.txt): every NEEDED entry of each plugin is in the allowed list, and no
# undefined symbol asks for the C++ runtime (GLIBCXX_, CXXABI_, GCC_ versions) or yaml-cpp.
#
#   plugin_deps_test.sh PLUGIN.so...
#
# Allowed: libc.so.6, and ld-linux-x86-64.so.2, the dynamic loader itself (already in every
# process that can load a plugin): the static C++ runtime asks it for __tls_get_addr (thread-local
# storage) and libgcc's unwinder for _dl_find_object. libm, libstdc++, libgcc_s, libyaml-cpp and
# anything else fail.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: plugin_deps_test.sh PLUGIN.so..." >&2; exit 2; }
allowed=" libc.so.6 ld-linux-x86-64.so.2 "
rc=0
for so in "$@"; do
    [ -f "$so" ] || { echo "FAIL $so: no such file" >&2; rc=1; continue; }
    needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    for lib in $needed; do
        case $allowed in
            *" $lib "*) ;;
            *) echo "FAIL $so: NEEDED $lib (only:$allowed)" >&2; rc=1 ;;
        esac
    done
    cxx=$(nm -D --undefined-only "$so" | grep -E '@(GLIBCXX|CXXABI|GCC)_|YAML' | head -5)
    if [ -n "$cxx" ]; then
        echo "FAIL $so: undefined symbols of the C++ runtime or yaml-cpp:" >&2
        echo "$cxx" >&2
        rc=1
    fi
    [ $rc -eq 0 ] && echo "ok $so: NEEDED" $needed
done
exit $rc
