#!/usr/bin/env bash
# The real CUDA checks on a machine WITH NVIDIA GPUs (CI has none; run this by hand on a GPU
# node). Builds the project into build-gpu/ (no Slurm daemons needed), runs every check of
# libautoheal_cuda_checks.so on every GPU through tests/gpu/run_cuda_checks.cpp, then
# `autoheal health` end to end, then autoheal-agent's NVML reads and kernel-log reader with real
# application Xids (tests/gpu/agent_nvml.sh, about 75 s) and what NVML's utilization shows the
# hang watch (tests/gpu/hang_activity.sh, about 30 s), and prints a per-GPU summary. About 2-3 minutes on an
# 8-GPU H100/H200 node; each GPU's checks are bounded by a timeout, so a hung GPU cannot stall it.
#
#   tests/gpu/run.sh                 build, run, summarize; exit 0 when every check passed
#   BUILD_DIR=...                    build folder (default build-gpu)
#   GPU_CHECK_TIMEOUT=150            seconds allowed for one GPU's checks
#   HEALTH_TIER=quick|full           the tier `autoheal health` runs (default quick)
#   CUDA_VISIBLE_DEVICES=...         honoured: only those GPUs are tested
#   AUTOHEAL_BIN=path                the autoheal program for the health step (e.g. one built
#                                    on another machine, when this one cannot build the project);
#                                    the autoheal-agent beside it runs the agent check
#   MODULE=path.so                   test this module and build nothing but the driver (e.g.
#                                    build/fakes/cuda/libautoheal_cuda_fake.so, to try this
#                                    script on a machine without GPUs)
#
# When the whole project cannot be configured here (no Slurm headers, no network for
# scripts/deps.sh), only the CUDA module is built (tests/gpu/module_only) and the autoheal
# health step is skipped.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
root=$PWD
build_dir=${BUILD_DIR:-build-gpu}
timeout_s=${GPU_CHECK_TIMEOUT:-150}
tier=${HEALTH_TIER:-quick}
jobs=$(nproc)

log() { printf 'autoheal: gpu-test: %s\n' "$*" >&2; }
die() {
    log "$*"
    exit 2
}

# --- the machine ---------------------------------------------------------------------------
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv,noheader \
        || log "nvidia-smi failed"
else
    log "nvidia-smi not found (continuing: the module needs only libcuda.so.1)"
fi

# --- build ---------------------------------------------------------------------------------
# Sets module, autoheal_bin and build_dir.
build() {
    local nvcc slurm_src
    nvcc=${CUDACXX:-$(command -v nvcc || true)}
    [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
    [ -n "$nvcc" ] || die "no nvcc: install the CUDA toolkit or set CUDACXX"
    log "nvcc: $nvcc ($("$nvcc" --version | grep -o 'release [0-9.]*'))"

    slurm_src=${SLURM_SRC_DIR:-}
    if [ -z "$slurm_src" ]; then
        slurm_src=$(scripts/deps.sh --print-slurm-src 2>/dev/null) \
            || { scripts/deps.sh && slurm_src=$(scripts/deps.sh --print-slurm-src); } \
            || slurm_src=""
    fi
    mkdir -p "$build_dir"
    if [ -n "$slurm_src" ] \
        && cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSLURM_SRC_DIR="$slurm_src" \
            -DCMAKE_CUDA_COMPILER="$nvcc" >"$build_dir/configure.log" 2>&1; then
        log "building autoheal + the CUDA module in $build_dir"
        if ! cmake --build "$build_dir" -j "$jobs" --target autoheal_cuda_checks \
            >"$build_dir/build.log" 2>&1; then
            tail -30 "$build_dir/build.log"
            die "build failed (log: $build_dir/build.log)"
        fi
        if cmake --build "$build_dir" -j "$jobs" --target autoheal autoheal-agent \
            >>"$build_dir/build.log" 2>&1; then
            autoheal_bin=$build_dir/bin/autoheal
        else
            log "the autoheal program did not build; skipping the autoheal health step"
        fi
    else
        log "the project does not configure here (see $build_dir/configure.log); building only the CUDA module"
        build_dir=$build_dir-module
        mkdir -p "$build_dir"
        if ! { cmake -S tests/gpu/module_only -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
            -DCMAKE_CUDA_COMPILER="$nvcc" && cmake --build "$build_dir" -j "$jobs"; } \
            >"$build_dir/build.log" 2>&1; then
            tail -30 "$build_dir/build.log"
            die "module build failed (log: $build_dir/build.log)"
        fi
    fi
    module=$build_dir/lib/autoheal/libautoheal_cuda_checks.so
    [ -f "$module" ] || module=$build_dir/lib/libautoheal_cuda_checks.so
}

start=$(date +%s)
module=${MODULE:-}
autoheal_bin=""
if [ -n "$module" ]; then
    log "MODULE=$module: building only the driver"
    mkdir -p "$build_dir"
    [ -x "$build_dir/bin/autoheal" ] && autoheal_bin=$build_dir/bin/autoheal
else
    build
fi
[ -f "$module" ] || die "no $module after the build (did CMake find nvcc? see the logs in $root)"
module=$(realpath "$module")
driver=$build_dir/run_cuda_checks
g++ -O2 -std=c++17 -o "$driver" tests/gpu/run_cuda_checks.cpp -ldl || die "driver build failed"
log "built in $(($(date +%s) - start)) s"

# --- every check on every GPU -----------------------------------------------------------------
count=$("$driver" "$module" count) || die "the module does not load"
if [ "$count" -le 0 ]; then
    "$driver" "$module" run 0 probe gemm '{"n": 64, "iterations": 1}' || true
    die "the module sees no CUDA device (count=$count; the line above says why)"
fi
log "$count CUDA device(s)"
results=$build_dir/gpu-results.log
: >"$results"
for ((d = 0; d < count; d++)); do
    log "gpu $d"
    timeout -k 10 "$timeout_s" "$driver" "$module" run "$d" | tee -a "$results"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 124 ] && printf 'RESULT\t%d\ttimeout\t-1\t%d\t{"error":"timed out"}\n' "$d" "$timeout_s" \
        | tee -a "$results"
done
if [ "$count" -gt 1 ]; then
    log "nccl_allreduce over all $count GPUs"
    timeout -k 10 120 "$driver" "$module" run 0 nccl nccl_allreduce '{"bytes": 268435456, "iterations": 20}' \
        | tee -a "$results"
fi

[ -n "${AUTOHEAL_BIN:-}" ] && autoheal_bin=$AUTOHEAL_BIN

# --- autoheal health, end to end (NVML snapshot + the CUDA module) ----------------------------
if [ -n "$autoheal_bin" ] && [ -x "$autoheal_bin" ]; then
    config=$(mktemp /tmp/autoheal-gpu-test.XXXXXX.yaml)
    printf 'health:\n  cuda_module: %s\n' "$module" >"$config"
    log "autoheal health --tier $tier --json (cuda_module: $module)"
    AUTOHEAL_CONFIG=$config timeout -k 10 200 "$autoheal_bin" health --tier "$tier" --json
    log "autoheal health exit status: $? (0 healthy, 1 unhealthy, 2 unknown)"
    rm -f "$config"
else
    log "autoheal health skipped (no $build_dir/bin/autoheal)"
fi

# --- autoheal-agent: NVML's Xid events, error counters, /dev/kmsg (tests/gpu/agent_nvml.sh) --
extra_rc=0
if [ -n "$autoheal_bin" ] && [ -x "$(dirname "$autoheal_bin")/autoheal-agent" ]; then
    log "autoheal-agent with the real NVML and kernel log, and real application Xids"
    tests/gpu/agent_nvml.sh "$(dirname "$autoheal_bin")"
    extra_rc=$?
else
    log "the agent check skipped (no autoheal-agent beside $autoheal_bin)"
fi
# --- the hang watch's premise: NVML's utilization at rest, spinning and working -----------------
if [ -n "$autoheal_bin" ]; then
    log "NVML's utilization at rest, spinning on a flag, in GEMMs and copies"
    tests/gpu/hang_activity.sh "$(dirname "$autoheal_bin")" || extra_rc=1
fi

# --- summary -----------------------------------------------------------------------------------
echo
"$driver" summary "$results"
rc=$?
log "results: $results; total $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] && rc=$extra_rc
exit $rc
