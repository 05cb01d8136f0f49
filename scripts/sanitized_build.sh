# Sourced by scripts/test-asan.sh and scripts/fuzz.sh: the one sanitized build they share.
#
# build-san/ (SAN_BUILD to change; git ignores it) is configured with clang, ASan + UBSan and
# libFuzzer's coverage instrumentation over the whole tree (AUTOHEAL_FUZZ=ON), at -O1 with line
# tables only (all a report's stack needs). make fuzz builds the fuzz targets there, make test-asan
# every target and runs the unit tests; in CI the second builds only what the first did not
# (one sanitized build instead of two: about 5 minutes less in CI on 2 cores).
#
#   configure_sanitized_build LOG   configures $san_build (from scratch the first time, quickly after);
#                                   the configure output goes to LOG, and to stderr on failure
san_build=${SAN_BUILD:-build-san}

configure_sanitized_build() {
    local log=$1 slurm_src
    slurm_src=$(scripts/deps.sh --print-slurm-src) || return 2
    mkdir -p "$san_build"
    printf '*\n' >"$san_build/.gitignore"  # the whole folder is a build output
    if ! cmake -S . -B "$san_build" -DCMAKE_BUILD_TYPE=Debug \
            -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
            -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
            -DAUTOHEAL_FUZZ=ON -DSLURM_SRC_DIR="$slurm_src" >"$log" 2>&1; then
        cat "$log" >&2
        return 2
    fi
}
