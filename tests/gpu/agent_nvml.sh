#!/usr/bin/env bash
# autoheal-agent's NVML reads on a machine with NVIDIA GPUs (CI has none; tests/gpu/run.sh calls
# this after the CUDA checks). No Slurm is needed: the agent runs in dry run against a slurm.conf
# whose controller is not there (its calls to Slurm fail after libslurm's own retries and it goes
# on), with an empty file for its kernel log, so NVML's event API is the only way it can hear of an
# Xid. While it runs, tests/gpu/xid31.cu makes one real Xid 31 (a kernel writing through a null
# pointer: the application's fault, which the driver recovers from; nothing is reset).
# Passes when
#   - the agent heard the Xid through NVML's event stream and named it the application's
#     (`xid events: <bus>/31: user_error`), and says how long after the fault it knew;
#   - its error-counter watch (every 2 s, all GPUs) read NVML throughout and saw no change
#     (a change on a healthy GPU would take the node out of service in production);
#   - the kernel's own line for that Xid (dmesg), read by `autoheal classify`, is the
#     application's too.
#   tests/gpu/agent_nvml.sh BIN_DIR     BIN_DIR holds autoheal-agent and autoheal
#   NVML_LIBRARY=path                   the NVML the agent loads (default libnvidia-ml.so.1)
#   AGENT_SECONDS=40                    how long the agent runs in all
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
bin_dir=$(realpath "${1:?usage: tests/gpu/agent_nvml.sh BIN_DIR}")
seconds=${AGENT_SECONDS:-40}
work=$(mktemp -d /tmp/autoheal-agent-nvml.XXXXXX)
log() { printf 'autoheal: gpu-agent: %s\n' "$*" >&2; }
fail=0
check() {  # check NAME CONDITION-EXIT-STATUS
    if [ "$2" -eq 0 ]; then log "PASS $1"; else log "FAIL $1"; fail=1; fi
}

nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O2 -o "$work/xid31" tests/gpu/xid31.cu || { log "nvcc failed"; exit 2; }

mkdir -p "$work/plugins" "$work/state"
: >"$work/kern.log"
cat >"$work/slurm.conf" <<EOF
ClusterName=gpu-agent-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=1
PluginDir=$work/plugins
NodeName=gpu-agent-test CPUs=1
PartitionName=test Nodes=gpu-agent-test Default=YES
EOF
cat >"$work/autoheal.yaml" <<EOF
log_target: file
log_file: $work/autoheal.log
state_dir: $work/state
health:
  nvml_library: ${NVML_LIBRARY:-libnvidia-ml.so.1}
remediation:
  dry_run: true
  kernel_log: $work/kern.log
agent:
  counter_interval: 2s
  heartbeat_interval: 2s
EOF
export SLURM_CONF=$work/slurm.conf AUTOHEAL_CONFIG=$work/autoheal.yaml
export AUTOHEAL_RULES_DIR=${AUTOHEAL_RULES_DIR:-$PWD/etc/rules.d}
start=$(date +%s)
# SIGTERM waits for the Slurm call in flight (libslurm retries an absent controller for about 9 s).
timeout -k 20 "$seconds" "$bin_dir/autoheal-agent" --node gpu-agent-test &
agent=$!

# The event stream starts once the agent's first round of Slurm calls has failed (its hang watch
# logs that): NVML reports only the events that come after a set registers.
for _ in $(seq 60); do
    grep -q 'hang watch' "$work/autoheal.log" 2>/dev/null && break
    sleep 0.5
done
sleep 2
fault_ms=$(date +%s%3N)
"$work/xid31" 0 &
xid31_pid=$!
wait "$xid31_pid"
check "xid31 faulted with cudaErrorIllegalAddress" $?

heard=""
for _ in $(seq 30); do
    heard=$(grep -m1 'xid events: .*/31: ' "$work/autoheal.log") && break
    sleep 0.5
done
wait "$agent"
log "agent ran $(($(date +%s) - start)) s; its log:"
cat "$work/autoheal.log" >&2

[ -n "$heard" ]
check "the agent heard Xid 31 through NVML's event API" $?
grep -q 'xid events: .*/31: user_error' <<<"$heard"
check "the agent named it the application's (user_error)" $?
if [ -n "$heard" ]; then
    at=$(cut -d' ' -f1 <<<"$heard")
    heard_ms=$(date -d "$at" +%s%3N)
    log "the agent knew $((heard_ms - fault_ms)) ms after the fault (1 s of it: the hold that lets the kernel log's line win)"
fi
! grep -E 'counters: |xid events: (error|the stream ended|NVML)' "$work/autoheal.log" >&2
check "the counter watch and the event stream read NVML without a change or an error" $?

# Only this run's line: the node's kernel log may hold other Xids, and earlier runs' ones.
kernel=$(dmesg 2>/dev/null | grep "NVRM: Xid .*: 31, pid=$xid31_pid, name=xid31" | tail -1)
if [ -n "$kernel" ]; then
    log "the kernel's lines:"
    printf '%s\n' "$kernel" >&2
    printf '%s\n' "$kernel" | "$bin_dir/autoheal" classify --json - >"$work/classify.json"
    grep -q '"cause": *"user_error"' "$work/classify.json"
    check "autoheal classify names the kernel's Xid 31 line the application's" $?
    cat "$work/classify.json" >&2
else
    log "dmesg shows no NVRM Xid line here (no kernel log in this machine?): not checked"
fi
rm -rf "$work"
exit $fail
