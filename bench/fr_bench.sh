#!/usr/bin/env bash
# Benchmark of the flight recorder analysis: `autoheal classify` on the dumps of a 1,024-rank job
# that hung (one rank never entered the collective), against Python's own unpickler loading the
# same files (what PyTorch's fr_trace does before it compares anything), in the same run.
#
#   bench/fr_bench.sh BUILD_DIR
#
# Input: tests/fixtures/flight_recorder/gen_dumps.py --bench RANKS ENTRIES, pickled as torch does
# (protocol 2), one file per rank in one folder per node (8 ranks a node), cached in
# /tmp/autoheal-bench/fr-RANKS-ENTRIES and regenerated when the generator changed.
# AUTOHEAL_FR_RANKS (default 1024) and AUTOHEAL_FR_ENTRIES (default 2000: the buffer size the
# SPANK plugin sets, so every dump is full) override the size; AUTOHEAL_BENCH_DIR the cache.
#
# Measured (best of 3 wall-clock runs each, bench/measure.py):
#   classify  BUILD_DIR/bin/autoheal classify --json DIR   (reads, parses, analyses; and its RSS)
#   pickle    python3 -c 'pickle.load' over every file     (reading only, no analysis)
# Exit status: 1 when classify does not name the culprit rank or exits non-zero; the verdict
# line says whether the goal (classify under 1 s) was met, without failing on it.
set -uo pipefail

build_dir=${1:?usage: fr_bench.sh BUILD_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
autoheal="$build_dir/bin/autoheal"
gen="$repo/tests/fixtures/flight_recorder/gen_dumps.py"
measure="$here/measure.py"
ranks=${AUTOHEAL_FR_RANKS:-1024}
entries=${AUTOHEAL_FR_ENTRIES:-2000}
cache=${AUTOHEAL_BENCH_DIR:-/tmp/autoheal-bench}
goal_s=1.0

die() { echo "bench: fr: $*" >&2; exit 1; }
# The shipped rules, unless this build has its own next to it (as classify_bench.sh).
if [ -z "${AUTOHEAL_RULES_DIR:-}" ] && [ ! -d "$build_dir/etc/autoheal/rules.d" ] &&
    [ -d "$repo/etc/rules.d" ]; then
    export AUTOHEAL_RULES_DIR="$repo/etc/rules.d"
fi
[ -x "$autoheal" ] || die "$autoheal not found; run 'make' first"
command -v python3 >/dev/null || die "python3 not found"
dir="$cache/fr-$ranks-$entries"
stamp=$(sha256sum "$gen" | cut -c1-16)
if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$dir" && mkdir -p "$dir" || die "cannot create $dir"
    echo "bench: fr: writing $ranks dumps of $entries entries to $dir" >&2
    python3 "$gen" --bench "$ranks" "$entries" "$dir" || die "gen_dumps.py failed"
    echo "$stamp" >"$dir/.stamp"
fi
bytes=$(du -sb --exclude=.stamp "$dir" | cut -f1)
cat "$dir"/*/* >/dev/null  # page cache, for both

out=$("$autoheal" classify --json "$dir") || die "classify failed"
culprit=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["culprit"]["rank"])')
want=$((ranks > 13 ? ranks * 13 / 1024 : ranks - 1))
[ "$culprit" = "$want" ] || die "classify named rank $culprit, not $want"

loader='import glob,pickle,sys
for p in glob.glob(sys.argv[1] + "/*/*"):
    with open(p, "rb") as f: pickle.load(f)'
best_s='' peak_rss_kib='' rc=''
eval "$(python3 "$measure" --label classify --runs 3 -- "$autoheal" classify --json "$dir")"
[ "$rc" = 0 ] || die "classify exited $rc"
classify_s=$best_s classify_rss=$((peak_rss_kib / 1024))
eval "$(python3 "$measure" --label pickle --runs 3 -- python3 -c "$loader" "$dir")"
pickle_s=$best_s
python3 - "$ranks" "$entries" "$bytes" "$classify_s" "$pickle_s" "$classify_rss" "$goal_s" <<'PY'
import sys
ranks, entries, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
c, p, rss, goal = float(sys.argv[4]), float(sys.argv[5]), sys.argv[6], float(sys.argv[7])
print(f"fr: {ranks} ranks x {entries} entries, {size / 1e6:.0f} MB of dumps")
print(f"fr: classify {c:.3f} s ({size / 1e6 / c:.0f} MB/s, peak RSS {rss} MiB); "
      f"python pickle.load alone {p:.3f} s; pickle_vs_classify {p / c:.2f}x")
print(f"fr: goal classify < {goal:.1f} s: {'met' if c < goal else 'NOT met'}")
PY
