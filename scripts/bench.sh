#!/usr/bin/env bash
# make bench: runs every benchmark program the build produced (build/bin/bench_*). Each prints
# its own ratios against a baseline measured in the same run.
set -uo pipefail
build_dir=${1:-build}
shopt -s nullglob
benches=("$build_dir"/bin/bench_*)
if [ ${#benches[@]} -eq 0 ]; then
    echo "autoheal: bench: this build has no benchmarks yet"
    exit 0
fi
rc=0
for b in "${benches[@]}"; do
    echo "== $(basename "$b")"
    "$b" || rc=1
done
exit $rc
