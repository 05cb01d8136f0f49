#!/usr/bin/env bash
# The quick tier's own cost in the prolog: process start, config, NVML snapshot in its child,
# the verdicts, the CUDA check children and the baseline snapshot written to disk — with fake
# GPUs (8 per node, tests/fakes) whose checks take no time, so what is measured is autoheal's
# overhead, not GPU work. Compared with a plain /bin/true prolog measured in the same run.
#
#   bench/prolog_bench.sh BUILD_DIR
#
# Prints prolog_true_ms, prolog_quick_ms (medians over AUTOHEAL_BENCH_RUNS runs, default 40),
# prolog_quick_overhead_ms (their difference) and prolog_quick_vs_true (their ratio).
# Exit 1 when the prolog fails or the overhead is 50 ms or more (the goal).
set -uo pipefail
build_dir=$(cd "${1:?usage: prolog_bench.sh BUILD_DIR}" && pwd) || exit 2
runs=${AUTOHEAL_BENCH_RUNS:-40}
die() { echo "bench: prolog: $*" >&2; exit 1; }
[ -x "$build_dir/bin/autoheal-prolog" ] || die "$build_dir/bin/autoheal-prolog missing: run make"
nvml="$build_dir/fakes/nvml/libnvidia-ml.so.1"
cuda="$build_dir/fakes/cuda/libautoheal_cuda_fake.so"
[ -f "$nvml" ] || die "$nvml missing: run make"

root=$(mktemp -d /tmp/autoheal-prolog-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/etc/autoheal" "$root/lib/fake-gpu/scenarios" "$root/state"
cp "$build_dir/bin/autoheal-prolog" "$root/bin/"
cp "$nvml" "$root/lib/fake-gpu/"
cuda_line=""
if [ -f "$cuda" ]; then
    cp "$cuda" "$root/lib/fake-gpu/"
    cuda_line="  cuda_module: $root/lib/fake-gpu/libautoheal_cuda_fake.so"
fi
# 8 healthy GPUs whose fake CUDA checks return at once.
python3 - "$root/lib/fake-gpu/scenarios/default.json" <<'PY'
import json, sys
gpus = [{"minor": i, "pci_bus_id": "0000:%02x:00.0" % (0x1b + 0x10 * i),
         "cuda": {"seconds": 0}} for i in range(8)]
json.dump({"gpus": gpus}, open(sys.argv[1], "w"))
PY
cat >"$root/etc/autoheal/autoheal.yaml" <<CONF
log_file: $root/autoheal.log
state_dir: $root/state
health:
  nvml_library: $root/lib/fake-gpu/libnvidia-ml.so.1
$cuda_line
CONF

python3 - "$root" "$runs" <<'PY'
import os, statistics, subprocess, sys, time
root, runs = sys.argv[1], int(sys.argv[2])
env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "42", "SLURMD_NODENAME": "benchnode",
       "SLURM_JOB_USER": "bench", "SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7",
       "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "SPANK_AUTOHEAL_OPTIONS": "health_check=quick",
       "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"}
def timed(cmd):
    out = []
    for i in range(runs + 3):
        t = time.perf_counter()
        rc = subprocess.run(cmd, env=env).returncode
        dt = (time.perf_counter() - t) * 1000
        if rc != 0:
            print("bench: prolog: %s exited %d" % (cmd[0], rc)); sys.exit(1)
        if i >= 3:  # warm-up runs are not counted
            out.append(dt)
    return statistics.median(out)
true_ms = timed(["/bin/true"])
prolog_ms = timed([root + "/bin/autoheal-prolog"])
log = open(root + "/autoheal.log").read()
if "verdict=pass" not in log:
    print("bench: prolog: the quick tier did not pass on healthy fake GPUs:\n" + log[-2000:])
    sys.exit(1)
overhead = prolog_ms - true_ms
print("prolog_gpus=8 runs=%d %s" % (runs, log.strip().splitlines()[-1].split("info: ")[-1]))
print("prolog_true_ms=%.2f" % true_ms)
print("prolog_quick_ms=%.2f" % prolog_ms)
print("prolog_quick_overhead_ms=%.2f" % overhead)
print("prolog_quick_vs_true=%.1f" % (prolog_ms / true_ms))
print("bench: prolog quick overhead goal < 50 ms: %s" % ("met" if overhead < 50 else "not met"))
sys.exit(0 if overhead < 50 else 1)
PY
