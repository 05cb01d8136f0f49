#!/usr/bin/env bash
# make bench: the log classifier benchmark (bench/classify_bench.sh: `autoheal classify` against
# ripgrep with the same patterns, on a generated 1 GiB log), then every benchmark program the
# build produced (build/bin/bench_*). Each prints its own ratios against a baseline measured in
# the same run. Exit 1 when any of them fails.
set -uo pipefail
build_dir=${1:-build}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rc=0

echo "== classify_bench"
"$repo/bench/classify_bench.sh" "$build_dir" || rc=1

echo "== prolog_bench"
"$repo/bench/prolog_bench.sh" "$build_dir" || rc=1

shopt -s nullglob
benches=("$build_dir"/bin/bench_*)
for b in "${benches[@]}"; do
    echo "== $(basename "$b")"
    "$b" || rc=1
done
exit $rc
