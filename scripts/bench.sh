#!/usr/bin/env bash
# make bench: the log classifier benchmark (bench/classify_bench.sh: `autoheal classify` against
# ripgrep with the same patterns, on a generated 1 GiB log), the flight recorder analysis of a
# 1,024-rank job's dumps against Python's unpickler (bench/fr_bench.sh), the prolog's overhead, the time from
# a job's failure to its rerun with autoheal and with Slurm's own requeue (bench/requeue_bench.sh,
# a local cluster with stock timing, about 3 minutes), autoheal-agent's fault-to-rerun time
# against a hung job's own time limit and its idle cost (bench/agent_bench.sh), the submit throughput with and without the
# job_submit and SPANK plugins (bench/submit_bench.sh, bursts of 1,000 sbatch on a local cluster
# of its own), then every benchmark program the build produced (build/bin/bench_*, among them
# bench_decision: the controller's decision for a 2,048-node job; bench_sim: autoheal simulate's
# ETTR with and without autoheal on Llama 3's 54 days, sim_ettr_autoheal=... sim_ettr_slurm=...,
# and its cost at 256, 2,048 and 16,384 nodes; bench_telemetry: autoheal-agent's power and
# temperature sampling of 8 GPUs against its loop without sampling, goal under 0.5% of a core). Each prints its own ratios
# against a baseline measured in the same run. Exit 1 when any of them fails.
set -uo pipefail
build_dir=${1:-build}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rc=0

echo "== classify_bench"
"$repo/bench/classify_bench.sh" "$build_dir" || rc=1

echo "== fr_bench"
"$repo/bench/fr_bench.sh" "$build_dir" || rc=1

echo "== prolog_bench"
"$repo/bench/prolog_bench.sh" "$build_dir" || rc=1

echo "== requeue_bench"
"$repo/bench/requeue_bench.sh" "$build_dir" || rc=1

echo "== agent_bench"
"$repo/bench/agent_bench.sh" "$build_dir" || rc=1

echo "== submit_bench"
"$repo/bench/submit_bench.sh" "$build_dir" || rc=1

shopt -s nullglob
benches=("$build_dir"/bin/bench_*)
for b in "${benches[@]}"; do
    echo "== $(basename "$b")"
    "$b" || rc=1
done
exit $rc
