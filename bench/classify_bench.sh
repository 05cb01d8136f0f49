#!/usr/bin/env bash
# Benchmark of `autoheal classify` against ripgrep, measured in the same run on the same file.
#
#   bench/classify_bench.sh BUILD_DIR
#
# Input: a deterministic mixed GPU-node log (bench/gen_mixed_log.py) of 1 GiB, cached in
# /tmp/autoheal-bench and regenerated when it is missing or the generator (or the size)
# changed. AUTOHEAL_BENCH_BYTES overrides the size; AUTOHEAL_BENCH_DIR the cache folder.
# Both files are read once before timing, so every tool reads from the page cache.
#
# Measured (best of 3 wall-clock runs each, bench/measure.py):
#   classify  BUILD_DIR/bin/autoheal classify --json FILE        (and its peak RSS), its compiled
#             rules read from the cache folder a first run filled (core/src/diag/scanner_cache.h),
#             as every run after the first on a machine is
#   classify_nocache  the same with AUTOHEAL_CACHE_DIR empty: the rules compiled in every run
#   rg        rg --no-config --no-unicode -c -f PATTERNS FILE   with PATTERNS = `autoheal rules
#             patterns` (--no-unicode: autoheal's patterns match bytes, Latin-1, and rg's Unicode
#             classes and case folding over 130+ alternatives blow its automaton up to minutes),
#             the very signatures classify matches on (named groups made plain for rg, which
#             rejects a group name used twice in one regex; that does not change what matches)
#   literal   rg --no-config -c -F 'NVRM: Xid' FILE   (reference: a plain literal scan)
# and classify's peak RSS again on an input 4x smaller, to show memory does not grow with input.
#
# Throughput is in MB/s with MB = 10^6 bytes. RSS is in MiB (2^20 bytes).
# Exit status: 1 when classify is slower than rg with the same patterns (classify_vs_rg < 1),
# its peak RSS reaches 64 MiB, or it exits non-zero; 0 otherwise. The goal is
# classify_vs_rg >= 3; the verdict line says whether it was met, without failing on it.
set -uo pipefail

build_dir=${1:?usage: classify_bench.sh BUILD_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
autoheal="$build_dir/bin/autoheal"
gen="$here/gen_mixed_log.py"
measure="$here/measure.py"
bytes=${AUTOHEAL_BENCH_BYTES:-1073741824}
cache=${AUTOHEAL_BENCH_DIR:-/tmp/autoheal-bench}
rss_limit_mib=64
n_runs=3
budget_s=60  # stop repeating a measurement once its runs have taken this long (>= 1 run)

die() { echo "bench: classify: $*" >&2; exit 1; }

if ! [[ "$bytes" =~ ^[0-9]+$ ]] || ((bytes < 4096)); then
    die "AUTOHEAL_BENCH_BYTES must be a number >= 4096"
fi
command -v python3 >/dev/null || die "python3 not found"
command -v rg >/dev/null || die "rg (ripgrep) not found; run 'make deps'"
[ -x "$autoheal" ] || die "$autoheal not found; run 'make' first"
"$autoheal" classify --help >/dev/null 2>&1 || die "$autoheal has no working 'classify' command"
mkdir -p "$cache" || die "cannot create $cache"
work=$(mktemp -d "$cache/run.XXXXXX") || die "cannot create a work folder in $cache"
trap 'rm -rf "$work"' EXIT

human_size() {
    if ((${1} % (1 << 30) == 0)); then echo "$((${1} >> 30))GiB"
    elif ((${1} % (1 << 20) == 0)); then echo "$((${1} >> 20))MiB"
    else echo "${1}B"; fi
}

# ensure_log BYTES PATH: (re)generates PATH unless its stamp matches this generator and size.
ensure_log() {
    local size=$1 path=$2 stamp want
    want="$(sha256sum "$gen" | cut -d' ' -f1) $size"
    stamp="$path.stamp"
    if [ -f "$path" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
        [ "$(stat -c %s "$path")" = "$size" ]; then
        return 0
    fi
    echo "bench: generating $(human_size "$size") mixed log at $path"
    rm -f "$stamp"
    python3 "$gen" "$size" "$path" || die "generator failed"
    echo "$want" >"$stamp"
}

full="$cache/mixed-$(human_size "$bytes").log"
small_bytes=$((bytes / 4))
small="$cache/mixed-$(human_size "$small_bytes").log"
ensure_log "$bytes" "$full"
ensure_log "$small_bytes" "$small"
cat "$full" "$small" >/dev/null  # warm the page cache

# The pattern set classify uses. If this build has no rules of its own next to it, use the
# repository's (both commands then read the same folder).
if [ -z "${AUTOHEAL_RULES_DIR:-}" ] && [ ! -d "$build_dir/etc/autoheal/rules.d" ] &&
    [ -d "$repo/etc/rules.d" ]; then
    export AUTOHEAL_RULES_DIR="$repo/etc/rules.d"
fi
"$autoheal" rules patterns >"$work/patterns.re2" || die "'autoheal rules patterns' failed"

# For rg: drop named-group names ((?P<n>...) and (?<n>...) become (...)), wrap each pattern in
# (?:...), keep everything else, and keep only patterns rg accepts on their own (each rejected
# one is named).
python3 - "$work/patterns.re2" "$work/patterns.plain" <<'EOF' || die "cannot prepare the patterns for rg"
import sys
src, dst = sys.argv[1], sys.argv[2]
out = []
for line in open(src, encoding="utf-8", errors="surrogateescape").read().split("\n"):
    if not line:
        continue
    s, i = [], 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            s.append(line[i:i + 2]); i += 2; continue
        if c == "(" and (line.startswith("(?P<", i) or
                         (line.startswith("(?<", i) and not line.startswith("(?<=", i)
                          and not line.startswith("(?<!", i))):
            close = line.find(">", i)
            if close != -1:
                s.append("("); i = close + 1; continue
        s.append(c); i += 1
    # rg joins -f patterns with '|' as they are; a group keeps an inline flag such as (?i)
    # from leaking into the patterns after it.
    out.append("(?:" + "".join(s) + ")")
open(dst, "w", encoding="utf-8", errors="surrogateescape").write("".join(p + "\n" for p in out))
EOF
total_patterns=$(grep -c . "$work/patterns.plain")
((total_patterns > 0)) || die "'autoheal rules patterns' printed no patterns"
: >"$work/patterns.rg"
dropped=0
while IFS= read -r pat; do
    if rg --no-config --no-unicode -c -e "$pat" - </dev/null >/dev/null 2>"$work/rg.err"; [ $? -eq 2 ]; then
        echo "bench: rg rejects pattern, dropped: $pat ($(grep -m1 -E '^error:|limit' "$work/rg.err" || head -n1 "$work/rg.err"))"
        dropped=$((dropped + 1))
    else
        printf '%s\n' "$pat" >>"$work/patterns.rg"
    fi
done <"$work/patterns.plain"
rg_patterns=$((total_patterns - dropped))
echo "bench: $total_patterns patterns from 'autoheal rules patterns', $dropped dropped for rg"
((rg_patterns > 0)) || die "rg accepts none of the patterns"

# measure NAME OK_RCS CMD...: sets m_best_s, m_rss_kib and m_rc for that command.
measure() {
    local name=$1 ok=$2 line best_s runs peak_rss_kib rc
    shift 2
    line=$(python3 "$measure" --label "$name" --runs "$n_runs" --budget-s "$budget_s" \
        --ok-rc "$ok" --stdout "$work/$name.out" -- "$@") || die "measure.py failed for $name"
    eval "$line"  # best_s=... runs=... peak_rss_kib=... rc=...
    : "$runs"
    m_best_s=$best_s m_rss_kib=$peak_rss_kib m_rc=$rc
}

echo "bench: input $full ($bytes bytes), best of $n_runs runs each"
export AUTOHEAL_CACHE_DIR="$work/cache"
"$autoheal" classify --json /dev/null >/dev/null || die "classify of an empty input failed"
measure classify 0 "$autoheal" classify --json "$full"
classify_best_s=$m_best_s classify_rss_kib=$m_rss_kib classify_rc=$m_rc
measure classify_nocache 0 env AUTOHEAL_CACHE_DIR= "$autoheal" classify --json "$full"
classify_nocache_best_s=$m_best_s
measure classify_1t 0 "$autoheal" classify --json --threads 1 "$full"
classify_1t_best_s=$m_best_s
measure classify_small 0 "$autoheal" classify --json "$small"
classify_small_rss_kib=$m_rss_kib classify_small_rc=$m_rc
measure rg 0,1 rg --no-config --no-unicode -c -f "$work/patterns.rg" "$full"
rg_best_s=$m_best_s rg_rc=$m_rc
measure literal 0,1 rg --no-config -c -F 'NVRM: Xid' "$full"
literal_best_s=$m_best_s literal_rc=$m_rc
((rg_rc == 0)) || die "rg failed with the pattern set (exit $rg_rc)"
((literal_rc == 0)) || die "rg failed on the literal scan (exit $literal_rc)"

# One short summary of what classify found, so a broken diagnosis is visible next to the speed.
python3 - "$work/classify.out" "$work/rg.out" <<'EOF' || true
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("bench: classify --json output does not parse: %s" % e)
    sys.exit(0)
cause = d.get("cause") if isinstance(d, dict) else None
if isinstance(cause, dict):
    cause = cause.get("name") or cause.get("cause") or cause
keys = ", ".join(sorted(d)) if isinstance(d, dict) else type(d).__name__
print("bench: classify --json: cause=%s (keys: %s)" % (cause, keys))
print("bench: rg matching lines: %s" % open(sys.argv[2]).read().strip())
EOF

# MB = 10^6 bytes.
read -r classify_mbps rg_mbps literal_mbps ratio rss_mib rss_small_mib < <(python3 -c '
import sys
b, c, r, l, rss, rss_s = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), \
    float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
mbps = lambda s: b / 1e6 / s if s > 0 else 0.0
print("%.1f %.1f %.1f %.2f %.1f %.1f" % (mbps(c), mbps(r), mbps(l),
      (r / c) if c > 0 else 0.0, rss / 1024.0, rss_s / 1024.0))
' "$bytes" "$classify_best_s" "$rg_best_s" "$literal_best_s" "$classify_rss_kib" "$classify_small_rss_kib")

# classify scans with one thread per core (this machine: $(nproc)); rg searches one file with
# one thread. Both figures are printed; the goal is judged on the default.
read -r classify_1t_mbps ratio_1t classify_nocache_mbps ratio_nocache < <(python3 -c '
import sys
b, c, r, n = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
print("%.1f %.2f %.1f %.2f" % (b / 1e6 / c, r / c, b / 1e6 / n, r / n))' \
    "$bytes" "$classify_1t_best_s" "$rg_best_s" "$classify_nocache_best_s")
echo "classify_threads=$(nproc)"
echo "classify_mb_per_s=$classify_mbps"
echo "rg_patterns_mb_per_s=$rg_mbps ($rg_patterns patterns)"
echo "rg_single_literal_mb_per_s=$literal_mbps"
echo "classify_vs_rg=$ratio"
echo "classify_1thread_mb_per_s=$classify_1t_mbps"
echo "classify_1thread_vs_rg=$ratio_1t"
echo "classify_nocache_mb_per_s=$classify_nocache_mbps"
echo "classify_nocache_vs_rg=$ratio_nocache"
echo "classify_peak_rss_mib=$rss_mib"
echo "classify_peak_rss_mib_$(human_size "$small_bytes")=$rss_small_mib"

fail=0
if ((classify_rc != 0 || classify_small_rc != 0)); then
    echo "bench: FAIL: autoheal classify exited with $classify_rc ($(human_size "$bytes")) / $classify_small_rc ($(human_size "$small_bytes"))"
    fail=1
fi
ge() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2"; }
if ! ge "$ratio" 1.0; then
    echo "bench: FAIL: classify is slower than rg with the same patterns (classify_vs_rg=$ratio < 1.0)"
    fail=1
fi
for r in "$rss_mib" "$rss_small_mib"; do
    if ge "$r" "$rss_limit_mib"; then
        echo "bench: FAIL: classify peak RSS $r MiB >= $rss_limit_mib MiB"
        fail=1
        break
    fi
done
if ge "$ratio" 3.0; then
    echo "bench: classify_vs_rg goal >= 3: met"
else
    echo "bench: classify_vs_rg goal >= 3: not met"
fi
exit $fail
