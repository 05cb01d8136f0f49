#!/usr/bin/env bash
# autoheal-agent's NVML reads and its kernel-log reader on a machine with NVIDIA GPUs (CI has
# none; tests/gpu/run.sh calls this after the CUDA checks). No Slurm is needed: the agent runs in
# dry run against a slurm.conf whose controller is not there (its calls to Slurm fail after
# libslurm's own retries and it goes on). tests/gpu/app_fault.cu makes real application faults:
# the driver recovers from them, nothing is reset. Two rounds:
#  1. NVML only (an empty file as the agent's kernel log): one Xid 31 (a write through a null
#     pointer). Passes when the agent heard it through NVML's event stream and named it the
#     application's (`xid events: <bus>/31: user_error`), and says how long after the fault it
#     knew; when its error-counter watch (every 2 s, all GPUs) read NVML throughout and saw no
#     change (a change on a healthy GPU would take the node out of service in production); and
#     when the kernel's own line for that Xid (dmesg), read by `autoheal classify`, is the
#     application's too.
#  2. The node's real kernel log (`kernel_log: kmsg`, as shipped) beside NVML: an int read at an
#     odd address (the driver logs two Xid 13 lines without a pid, then an Xid 43 with it; NVML
#     reports only the 43: driver 580 on an H200). Passes when the agent read the driver's lines
#     from /dev/kmsg and left the job running (`kernel log: user_error (xid-app-fault): does not
#     interrupt jobs`), when NVML's event for the same GPU's same Xid was not handled a second
#     time (`already handled from the kernel log`, and no other `xid events:` line), when the
#     reader logged no problem, and when the kernel's lines, read by `autoheal classify`, are the
#     application's. Skipped where /dev/kmsg cannot be read.
#   tests/gpu/agent_nvml.sh BIN_DIR     BIN_DIR holds autoheal-agent and autoheal
#   NVML_LIBRARY=path                   the NVML the agent loads (default libnvidia-ml.so.1)
#   AFTER_FAULT_SECONDS=20              how long the agent runs on after the fault in round 1
#                                       (round 2: 8 s); it starts about 20 s before the fault
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
bin_dir=$(realpath "${1:?usage: tests/gpu/agent_nvml.sh BIN_DIR}")
work=$(mktemp -d /tmp/autoheal-agent-nvml.XXXXXX)
log() { printf 'autoheal: gpu-agent: %s\n' "$*" >&2; }
fail=0
check() {  # check NAME CONDITION-EXIT-STATUS
    if [ "$2" -eq 0 ]; then log "PASS $1"; else log "FAIL $1"; fail=1; fi
}

nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O2 -o "$work/app_fault" tests/gpu/app_fault.cu || { log "nvcc failed"; exit 2; }

mkdir -p "$work/plugins"
: >"$work/kern.log"
cat >"$work/slurm.conf" <<CONF
ClusterName=gpu-agent-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=1
PluginDir=$work/plugins
NodeName=gpu-agent-test CPUs=1
PartitionName=test Nodes=gpu-agent-test Default=YES
CONF
export SLURM_CONF=$work/slurm.conf AUTOHEAL_CONFIG=$work/autoheal.yaml
export AUTOHEAL_RULES_DIR=${AUTOHEAL_RULES_DIR:-$PWD/etc/rules.d}

# round NAME KERNEL_LOG AFTER FAULT: runs the agent with that kernel log, makes the fault 2 s
# after its first round of Slurm calls failed, stops the agent AFTER seconds later, and sets
# $agent_log, $fault_ms, $fault_pid and $kernel_before (how many lines dmesg held before the fault).
round() {
    local name=$1 kernel_log=$2 after=$3 fault=$4 agent
    mkdir -p "$work/$name"
    agent_log=$work/$name/autoheal.log
    cat >"$work/autoheal.yaml" <<CONF
log_target: file
log_file: $agent_log
state_dir: $work/$name
health:
  nvml_library: ${NVML_LIBRARY:-libnvidia-ml.so.1}
remediation:
  dry_run: true
  kernel_log: $kernel_log
agent:
  counter_interval: 2s
  heartbeat_interval: 2s
CONF
    local start
    start=$(date +%s)
    # SIGTERM waits for the Slurm call in flight (libslurm retries an absent controller ~9 s).
    timeout -k 20 120 "$bin_dir/autoheal-agent" --node gpu-agent-test &
    agent=$!
    # The event stream starts once the agent's first round of Slurm calls has failed (its hang
    # watch logs that): NVML reports only the events that come after a set registers.
    for _ in $(seq 60); do
        grep -q 'hang watch' "$agent_log" 2>/dev/null && break
        sleep 0.5
    done
    sleep 2
    kernel_before=$(dmesg 2>/dev/null | wc -l)
    fault_ms=$(date +%s%3N)
    "$work/app_fault" "$fault" 0 &
    fault_pid=$!
    wait "$fault_pid"
    check "$name: app_fault $fault faulted as expected" $?
    sleep "$after"
    kill -TERM "$agent" 2>/dev/null  # timeout passes it on
    wait "$agent"
    log "$name: the agent ran $(($(date +%s) - start)) s; its log:"
    cat "$agent_log" >&2
}

# classify_kernel NAME: the kernel's Xid lines for this round's fault (those after the fault's
# start; the node's kernel log may hold earlier ones), read by autoheal classify.
classify_kernel() {
    local name=$1 kernel
    kernel=$(dmesg 2>/dev/null | tail -n +$((kernel_before + 1)) | grep 'NVRM: Xid (')
    if [ -z "$kernel" ]; then
        log "$name: dmesg shows no NVRM Xid line here (no kernel log in this machine?): not checked"
        return
    fi
    log "$name: the kernel's lines:"
    printf '%s\n' "$kernel" >&2
    printf '%s\n' "$kernel" | "$bin_dir/autoheal" classify --json - >"$work/$name/classify.json"
    grep -q '"cause": *"user_error"' "$work/$name/classify.json"
    check "$name: autoheal classify names the kernel's Xid lines the application's" $?
    cat "$work/$name/classify.json" >&2
}

# --- round 1: NVML's event stream alone --------------------------------------------------------
round nvml "$work/kern.log" "${AFTER_FAULT_SECONDS:-20}" null
heard=$(grep -m1 'xid events: .*/31: ' "$agent_log")
[ -n "$heard" ]
check "nvml: the agent heard Xid 31 through NVML's event API" $?
grep -q 'xid events: .*/31: user_error' <<<"$heard"
check "nvml: the agent named it the application's (user_error)" $?
if [ -n "$heard" ]; then
    heard_ms=$(date -d "$(cut -d' ' -f1 <<<"$heard")" +%s%3N)
    log "nvml: the agent knew $((heard_ms - fault_ms)) ms after the fault" \
        "(1 s of it: the hold that lets the kernel log's line win)"
fi
! grep -E 'counters: |xid events: (error|the stream ended|NVML)' "$agent_log" >&2
check "nvml: the counter watch and the event stream read NVML without a change or an error" $?
classify_kernel nvml

# --- round 2: the node's kernel log beside NVML ------------------------------------------------
if [ -r /dev/kmsg ]; then
    round kmsg kmsg 8 misaligned
    grep -q 'kernel log: user_error (xid-app-fault): does not interrupt jobs' "$agent_log"
    check "kmsg: the agent read the driver's Xids from /dev/kmsg and left the job running" $?
    grep -q 'xid events: .*: already handled from the kernel log' "$agent_log"
    check "kmsg: NVML's event for the same GPU's same Xid was not handled again" $?
    ! grep -E 'xid events: |agent: kernel log: ' "$agent_log" \
        | grep -v -e 'does not interrupt jobs' -e 'already handled from the kernel log' >&2
    check "kmsg: the fault was handled once and the reader logged no problem" $?
    classify_kernel kmsg
else
    log "kmsg: /dev/kmsg cannot be read here: not checked"
fi
rm -rf "$work"
exit $fail
