#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in their own
# build folder, then runs each for SECONDS from the seed corpus in tests/fuzz/corpus.
#
#   scripts/fuzz.sh [SECONDS]     default 30 per fuzzer
#
# FUZZ_BUILD=build-fuzz  the build folder (apart from the gcc build; git ignores it). Everything
#                        a run writes stays there: the working corpus (seeds + what libFuzzer
#                        found, kept between runs), dictionaries, logs, crash inputs.
# Prints, per fuzzer, its executions and result. Exits 1 when a fuzzer found a crash, leak,
# timeout or out-of-memory (the input is in FUZZ_BUILD/fuzz/artifacts; the log says how to
# replay it), 2 on a usage or build error.
set -uo pipefail

seconds=${1:-30}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: scripts/fuzz.sh [SECONDS]  (a whole number of seconds per fuzzer)" >&2
    exit 2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${FUZZ_BUILD:-build-fuzz}
work=$build/fuzz
fuzzers=(fuzz_rules_load:rules fuzz_log_scan:logs)

log() { printf 'autoheal: fuzz: %s\n' "$*" >&2; }

# --- build -----------------------------------------------------------------------------------
slurm_src=$(scripts/deps.sh --print-slurm-src) || exit 2
mkdir -p "$work"
printf '*\n' >"$build/.gitignore"  # the whole folder is a build output
log "configuring $build (clang, ASan + UBSan, libFuzzer)"
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DAUTOHEAL_FUZZ=ON -DSLURM_SRC_DIR="$slurm_src" >"$work/configure.log" 2>&1; then
    cat "$work/configure.log" >&2
    exit 2
fi
log "building fuzz_rules_load fuzz_log_scan"
if ! cmake --build "$build" -j "$(nproc)" --target fuzz_rules_load fuzz_log_scan \
        >"$work/build.log" 2>&1; then
    grep -E 'error|Error' "$work/build.log" | head -40 >&2
    log "build failed; full log: $work/build.log"
    exit 2
fi

# --- corpora and dictionaries ----------------------------------------------------------------
for entry in "${fuzzers[@]}"; do
    kind=${entry#*:}
    mkdir -p "$work/corpus/$kind" "$work/artifacts"
    cp tests/fuzz/corpus/"$kind"/* "$work/corpus/$kind/"
done
# The shipped rules are seeds for the rules fuzzer, and their example lines for the log fuzzer.
shopt -s nullglob
for f in etc/rules.d/*.yaml; do
    cp "$f" "$work/corpus/rules/shipped-$(basename "$f")"
    sed -nE "s/^[[:space:]]*example:[[:space:]]*'(.*)'[[:space:]]*$/\1/p" "$f" |
        sed "s/''/'/g" >"$work/corpus/logs/shipped-examples-$(basename "$f" .yaml).log"
done
shopt -u nullglob

cat >"$work/rules.dict" <<'DICT'
"- rule: "
"- signature: "
"- list: "
"regex: "
"example: "
"items: "
"match: "
"unless: "
"cause: "
"actions: "
"requeue: "
"priority: "
"confidence: "
"suppressed_by: "
"contributes_actions: "
"escalate: "
"when: "
"repeats: "
"within: "
"per: "
"distinct: job"
"enabled: false"
"override: "
"replace"
"append"
"desc: "
"signature: "
"where: "
"min_count: "
"xid: "
"sxid: "
"any: "
"all: "
"not: "
"list: "
"faulty_gpu"
"nccl_timeout"
"user_error"
"drain"
"reset_gpu"
"rma_ticket"
"none"
"nccl-ranks-desync"
"nccl-ranks-agree"
"nccl-missing-rank"
"nccl-first-collective"
"context-"
"(?P<"
"(?i)"
"\\d+"
"30d"
"&a "
"*a"
"!!str "
"{}"
"[]"
DICT
cat >"$work/logs.dict" <<'DICT'
"NVRM: Xid (PCI:0000:3b:00): "
"NVRM: The NVIDIA GPU 0000:3b:00.0"
"fallen off the bus"
"nvidia-nvswitch0: SXid (PCI:0000:07:00.0): "
"[rank0]:"
"[Rank 1] "
"[PG 0 Rank 2] "
"Watchdog caught collective operation timeout: "
"WorkNCCL(SeqNum="
", OpType=ALLREDUCE"
", NumelIn="
"last completed NCCL work: -1"
"Mar 27 17:40:36 gpu-node-07 kernel: "
"gpu-node-07:1234:1300 [0] NCCL "
"\x0d\x0a"
"\x0a"
DICT

# --- run -------------------------------------------------------------------------------------
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
summary=()
for entry in "${fuzzers[@]}"; do
    name=${entry%%:*}
    kind=${entry#*:}
    out=$work/$name.log
    log "running $name for ${seconds}s (log: $out)"
    "$build/bin/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -detect_leaks=1 -print_final_stats=1 -dict="$work/$kind.dict" \
        -artifact_prefix="$work/artifacts/$name-" \
        "$work/corpus/$kind" "tests/fuzz/corpus/$kind" >"$out" 2>&1
    rc=$?
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$out" | tail -1)
    rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$out" | tail -1)
    artifact=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$out" | tail -1)
    if [ "$rc" -eq 0 ]; then
        result=ok
    else
        failed=1
        if grep -q 'contract violated' "$out"; then
            result="contract violation"
        elif grep -q 'ERROR: LeakSanitizer' "$out"; then
            result=leak
        elif grep -q 'ERROR: libFuzzer: timeout' "$out"; then
            result=timeout
        elif grep -qE 'ERROR: libFuzzer: (out-of-memory|malloc)' "$out"; then
            result=out-of-memory
        else
            result=crash
        fi
        grep -m1 -A30 -E '==ERROR|ERROR: libFuzzer|runtime error|contract violated' "$out" >&2
        [ -n "$artifact" ] && log "replay: $build/bin/$name $artifact"
    fi
    summary+=("$(printf '%-16s %10s runs %8s exec/s  %s' "$name" "${runs:-?}" "${rate:-?}" \
        "$result${artifact:+ ($artifact)}")")
done
for line in "${summary[@]}"; do printf 'autoheal: fuzz: %s\n' "$line"; done
exit "$failed"
