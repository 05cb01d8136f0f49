#!/usr/bin/env bash
# make test-asan: builds every target (core, health, remediation, the programs, the SPANK and
# job_submit plugins, the fake NVML and fake CUDA libraries, the CUDA module where nvcc exists)
# in the sanitized build (clang, ASan and UBSan; scripts/sanitized_build.sh, shared with make
# fuzz), then runs the unit tests (ctest -L unit, but the install tests) there. A memory error,
# leak or UB aborts the process that has it (failing its test), and every report is printed at
# the end and fails the run.
#
#   scripts/test-asan.sh [CTEST ARGS...]     e.g. -R diag_test, --repeat until-fail:3
#
# SAN_BUILD=build-san    the build folder (apart from the gcc build; git ignores it)
# ASAN_JOBS=$(nproc)     parallel compile and test jobs
# Exits with ctest's status (1 when a report was written), 2 on a configure or build error.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/sanitized_build.sh
build=$san_build
jobs=${ASAN_JOBS:-$(nproc)}

log() { printf 'autoheal: test-asan: %s\n' "$*" >&2; }

# --- build -----------------------------------------------------------------------------------
log "configuring $build (clang, ASan + UBSan)"
configure_sanitized_build "$build/configure.log" || exit 2
log "building (log: $build/build.log)"
if ! cmake --build "$build" -j "$jobs" >"$build/build.log" 2>&1; then
    grep -E -A5 'error|Error' "$build/build.log" | head -60 >&2
    log "build failed; full log: $build/build.log"
    exit 2
fi

# --- run -------------------------------------------------------------------------------------
# Every sanitized program the tests start (the CLI, the fake libraries dlopen'd into the tests,
# forked check children) reads these; programs without ASan ignore them. Reports go to files
# in $reports, one per process: a test that runs the CLI and keeps its stderr to itself cannot
# hide one, and any report fails the run even when every test passed.
reports=$(cd "$build" && pwd)/sanitizer-reports
rm -rf "$reports" && mkdir -p "$reports"
asan_defaults=detect_leaks=1:abort_on_error=1:strict_init_order=1:check_initialization_order=1
asan_defaults+=:detect_stack_use_after_return=1:strict_string_checks=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-$asan_defaults}:log_path=$reports/asan
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}:log_path=$reports/ubsan
# Not the install tests (install.staged, install.deb): they check what make install and the
# package lay out, which the sanitizers do not change, and cpack took 100 s of the run here.
log "running the unit tests (ASAN_OPTIONS=$ASAN_OPTIONS)"
(cd "$build" && ctest --output-on-failure -L unit -E '^install\.' -j "$jobs" "$@")
rc=$?
shopt -s nullglob
found=("$reports"/*)
if [ "${#found[@]}" -gt 0 ]; then
    for f in "${found[@]}"; do
        printf '\n--- %s\n' "$f" >&2
        cat "$f" >&2
    done
    log "${#found[@]} sanitizer report(s) above (kept in $reports)"
    [ "$rc" -eq 0 ] && rc=1
fi
exit "$rc"
