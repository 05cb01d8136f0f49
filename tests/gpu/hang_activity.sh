#!/usr/bin/env bash
# What NVML's utilization shows, read as autoheal reads it, for a GPU at rest, one spinning on a
# flag (a rank stuck in an NCCL collective) and two that work (bf16 GEMMs, device copies), on a
# machine with NVIDIA GPUs (CI has none). autoheal-agent's hang watch takes a GPU as working only
# when its utilization and its memory utilization both reach 5 %
# (kIdleUtilizationPercent, agent/include/autoheal/agent/hang_watch.h); this checks that premise:
# at rest and spinning are not working, GEMMs and copies are, in every sample.
#   tests/gpu/hang_activity.sh BIN_DIR     BIN_DIR holds autoheal (its NVML snapshot is read)
#   NVML_LIBRARY=path                      the NVML it loads (default libnvidia-ml.so.1)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
bin_dir=$(realpath "${1:?usage: tests/gpu/hang_activity.sh BIN_DIR}")
work=$(mktemp -d /tmp/autoheal-hang-activity.XXXXXX)
log() { printf 'autoheal: gpu-activity: %s\n' "$*" >&2; }
threshold=5

nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O2 -std=c++17 -o "$work/gpu_activity" tests/gpu/gpu_activity.cu -lcublas \
    || { log "nvcc failed"; exit 2; }
# Only the NVML snapshot: no CUDA check may load the GPU while it is sampled.
printf 'health:\n  nvml_library: %s\n  cuda_module: %s/none.so\n' \
    "${NVML_LIBRARY:-libnvidia-ml.so.1}" "$work" >"$work/autoheal.yaml"

# The loads run on CUDA's device 0; NVML numbers GPUs its own way (and ignores
# CUDA_VISIBLE_DEVICES): the snapshot's GPU is the one with that PCI bus id.
pci=$("$work/gpu_activity" pci) || { log "no CUDA device"; exit 2; }
log "the loads run on the GPU at $pci"

# Prints "util mem" of that GPU as autoheal's snapshot reads it.
sample() {
    AUTOHEAL_CONFIG=$work/autoheal.yaml "$bin_dir/autoheal" health --tier quick --json \
        | python3 -c 'import json, sys
def key(bus):  # "0000:3B:00.0" and "00000000:3b:00.0" alike
    domain, rest = bus.lower().split(":", 1)
    return int(domain, 16), rest
g = [g for g in json.load(sys.stdin)["snapshot"]["gpus"] if key(g["pci_bus_id"]) == key(sys.argv[1])][0]
print(g.get("utilization_gpu", "-"), g.get("utilization_memory", "-"))' "$pci"
}

fail=0
printf '%-6s %-28s %-16s %s\n' load "samples (util%/mem%)" "judged working" expected
for load in rest spin gemm copy; do
    pid=""
    if [ "$load" != rest ]; then
        "$work/gpu_activity" "$load" 9 &
        pid=$!
    fi
    sleep 3
    samples="" working=0 idle=0
    for _ in 1 2 3; do
        read -r util mem < <(sample)
        samples+="$util/$mem "
        if [ "$util" -ge "$threshold" ] 2>/dev/null && [ "$mem" -ge "$threshold" ]; then
            working=$((working + 1))
        else
            idle=$((idle + 1))
        fi
        sleep 1
    done
    [ -n "$pid" ] && { wait "$pid" || { log "$load: the load failed"; fail=1; }; }
    case $load in
        rest | spin) expected="none"; [ "$working" -eq 0 ] || fail=1 ;;
        *) expected="all"; [ "$idle" -eq 0 ] || fail=1 ;;
    esac
    printf '%-6s %-28s %-16s %s\n' "$load" "$samples" "$working of 3" "$expected"
done
rm -rf "$work"
if [ "$fail" -eq 0 ]; then
    log "PASS: the hang watch's premise holds here"
else
    log "FAIL: a load was judged against the hang watch's premise (above)"
fi
exit $fail
