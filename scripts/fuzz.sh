#!/usr/bin/env bash
# make fuzz: builds the libFuzzer targets (tests/fuzz) in the sanitized build (clang, ASan and
# UBSan; scripts/sanitized_build.sh), then runs each for SECONDS from the seed corpus in
# tests/fuzz/corpus.
#
#   scripts/fuzz.sh [SECONDS] [FUZZER...]   default 30 s per fuzzer; default every fuzzer
#
# SAN_BUILD=build-san    the sanitized build folder, shared with make test-asan
#                        (scripts/sanitized_build.sh). Everything a run writes stays in its
#                        fuzz/: the working corpus (seeds + what libFuzzer found, kept between
#                        runs), logs, crash inputs.
# FUZZ_JOBS=N            parallel compile jobs (default: every CPU)
# FUZZ_PARALLEL=N        fuzzers run at a time (default: every CPU)
# FUZZ_SEED=N            libFuzzer's random seed (default: a new one each run). With a seed and
#                        the same corpus (a fresh build folder, as CI has), a run tries the same
#                        inputs in the same order: a slower machine tries a prefix of what a
#                        faster one does, so what CI finds, the same command finds here.
# Prints, per fuzzer, its executions, coverage (libFuzzer's final cov: and ft:) and result.
# Exits 1 when a fuzzer found a crash, leak, timeout, out-of-memory or contract violation (the
# input is in SAN_BUILD/fuzz/artifacts; the log says how to replay it), 2 on a usage or build
# error.
set -uo pipefail

seconds=${1:-30}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: scripts/fuzz.sh [SECONDS] [FUZZER...]  (a whole number of seconds per fuzzer)" >&2
    exit 2
fi
shift $(($# > 0 ? 1 : 0))
if [ -n "${FUZZ_SEED:-}" ] && ! [[ "$FUZZ_SEED" =~ ^[1-9][0-9]{0,8}$ ]]; then
    echo "scripts/fuzz.sh: FUZZ_SEED must be a whole number from 1 to 999999999" >&2
    exit 2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/sanitized_build.sh
build=$san_build
work=$build/fuzz
# NAME:KIND — the target tests/fuzz/NAME.cpp, its seeds tests/fuzz/corpus/KIND and its
# dictionary tests/fuzz/dicts/KIND.dict (when there is one).
all_fuzzers=(
    fuzz_rules_load:rules          # rule files (etc/rules.d)
    fuzz_log_scan:logs             # kernel logs, job output, Slurm logs
    fuzz_config:config             # autoheal.yaml, every section parser
    fuzz_tickets:tickets           # remediation.tickets settings, spool file names
    fuzz_job_options:job_options   # plugstack.conf arguments, sbatch option values, job env
    fuzz_checkpoint:checkpoint     # checkpoint folder layouts (a real tree on tmpfs)
    fuzz_nvml_scenario:nvml        # the fake NVML's scenario files
    fuzz_resume_record:resume      # state_dir/jobs/<job>/resume.json
    fuzz_job_records:job_records   # node reports and decision records
    fuzz_quarantine:quarantine     # the quarantine file
    fuzz_flight_recorder:flight_recorder  # PyTorch flight recorder dumps (pickle, JSON)
)
fuzzers=()
if [ $# -eq 0 ]; then
    fuzzers=("${all_fuzzers[@]}")
else
    for want in "$@"; do
        found=
        for entry in "${all_fuzzers[@]}"; do
            [ "${entry%%:*}" = "$want" ] && fuzzers+=("$entry") && found=1
        done
        [ -n "$found" ] || { echo "scripts/fuzz.sh: no fuzzer '$want'" >&2; exit 2; }
    done
fi
names=()
for entry in "${fuzzers[@]}"; do names+=("${entry%%:*}"); done

log() { printf 'autoheal: fuzz: %s\n' "$*" >&2; }

# --- build -----------------------------------------------------------------------------------
mkdir -p "$work"
log "configuring $build (clang, ASan + UBSan, libFuzzer)"
configure_sanitized_build "$work/configure.log" || exit 2
log "building ${names[*]}"
if ! cmake --build "$build" -j "${FUZZ_JOBS:-$(nproc)}" --target "${names[@]}" \
        >"$work/build.log" 2>&1; then
    grep -E 'error|Error' "$work/build.log" | head -40 >&2
    log "build failed; full log: $work/build.log"
    exit 2
fi

# --- corpora ---------------------------------------------------------------------------------
for entry in "${fuzzers[@]}"; do
    kind=${entry#*:}
    mkdir -p "$work/corpus/$kind" "$work/artifacts"
    cp tests/fuzz/corpus/"$kind"/* "$work/corpus/$kind/"
done
# The shipped rules are seeds for the rules fuzzer, and their example lines for the log fuzzer;
# the shipped autoheal.yaml for the config fuzzer. The rules fuzzer compiles each input whole
# (RE2, then Hyperscan, under ASan, whose allocator Hyperscan's compiler spends its time in): a
# whole shipped file of 100 signatures takes 4 s or more per input there, and its mutants more,
# near -timeout once another fuzzer shares the CPU. So each shipped file is cut into seeds of at
# most 40 entries (at the top-level "- " that starts one); every entry is still in some seed.
shopt -s nullglob
for f in etc/rules.d/*.yaml; do
    [ -d "$work/corpus/rules" ] &&
        awk -v out="$work/corpus/rules/shipped-$(basename "$f" .yaml)" '
            /^- / { if (n % 40 == 0) { if (file) close(file); file = sprintf("%s-%02d.yaml", out, ++k) } n++ }
            file { print > file }' "$f"
    [ -d "$work/corpus/logs" ] &&
        sed -nE "s/^[[:space:]]*example:[[:space:]]*'(.*)'[[:space:]]*$/\1/p" "$f" |
        sed "s/''/'/g" >"$work/corpus/logs/shipped-examples-$(basename "$f" .yaml).log"
done
[ -d "$work/corpus/config" ] && cp etc/autoheal.yaml "$work/corpus/config/shipped-autoheal.yaml"
shopt -u nullglob

# --- run -------------------------------------------------------------------------------------
# FUZZ_PARALLEL fuzzers at a time (default: one per CPU; each libFuzzer process uses one). With a
# seed, each still tries the same inputs in the same order; a busier CPU tries fewer of them.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
parallel=${FUZZ_PARALLEL:-$(nproc)}

# run_fuzzer NAME:KIND: runs one fuzzer; writes its summary line to $work/NAME.summary, prints
# what it found, and exits non-zero when it found something.
run_fuzzer() {
    local name=${1%%:*} kind=${1#*:}
    local out=$work/$name.log dict=() seed=() rc
    [ -f "tests/fuzz/dicts/$kind.dict" ] && dict=(-dict="tests/fuzz/dicts/$kind.dict")
    [ -n "${FUZZ_SEED:-}" ] && seed=(-seed="$FUZZ_SEED")
    log "running $name for ${seconds}s${FUZZ_SEED:+ (seed $FUZZ_SEED)} (log: $out)"
    "$build/bin/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -detect_leaks=1 -print_final_stats=1 "${seed[@]}" "${dict[@]}" \
        -artifact_prefix="$work/artifacts/$name-" \
        "$work/corpus/$kind" "tests/fuzz/corpus/$kind" >"$out" 2>&1
    rc=$?
    local runs rate last cov ft artifact result
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$out" | tail -1)
    rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$out" | tail -1)
    # libFuzzer's last status line: "#N DONE cov: C ft: F corp: ..." (or the last pulse).
    last=$(grep -E '^#[0-9]+[[:space:]].*cov: [0-9]+' "$out" | tail -1)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
    [ -n "$last" ] && log "$name: $last"
    artifact=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$out" | tail -1)
    if [ "$rc" -eq 0 ]; then
        result=ok
    else
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
        grep -m1 -A30 -E '==ERROR|ERROR: libFuzzer|runtime error|contract violated|terminate called' \
            "$out" >&2
        [ -n "$artifact" ] && log "replay: $build/bin/$name $artifact"
    fi
    printf '%-19s %10s runs %7s exec/s  cov %5s  ft %6s  %s\n' "$name" "${runs:-?}" \
        "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result${artifact:+ ($artifact)}" \
        >"$work/$name.summary"
    [ "$rc" -eq 0 ]
}

failed=0
running=0
rm -f "$work"/*.summary
for entry in "${fuzzers[@]}"; do
    if [ "$running" -ge "$parallel" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
    run_fuzzer "$entry" &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
for name in "${names[@]}"; do
    printf 'autoheal: fuzz: %s\n' \
        "$(cat "$work/$name.summary" 2>/dev/null || echo "$name: no result")"
done
exit "$failed"
