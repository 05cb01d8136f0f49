#!/usr/bin/env bash
# Stops every daemon a start.sh of the same AUTOHEAL_CLUSTER_DIR started, by PID, even when that
# start failed half-way or its caller was killed. Safe to run when nothing is running.
#   tests/cluster/stop.sh [--purge]     --purge also removes the state folder
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[ -d "$cluster_dir/run" ] || { [ "${1:-}" = --purge ] && rm -rf "$cluster_dir"; exit 0; }

pids=()
# The agents, controller and nodes first, munged last (they need it to say goodbye).
for f in "$cluster_dir"/run/agent-*.pid "$cluster_dir"/run/slurmd-*.pid "$cluster_dir/run/slurmctld.pid" "$cluster_dir/run/munged.pid"; do
    pid=$(live_pid "$f") && pids+=("$pid")
done
if [ ${#pids[@]} -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null
    for _ in $(seq 1 100); do
        alive=()
        for pid in "${pids[@]}"; do [ -d "/proc/$pid" ] && alive+=("$pid"); done
        [ ${#alive[@]} -eq 0 ] && break
        sleep 0.1
    done
    if [ ${#alive[@]} -gt 0 ]; then
        log "killing daemons that ignored SIGTERM: ${alive[*]}"
        kill -KILL "${alive[@]}" 2>/dev/null
    fi
fi
# Job steps (slurmstepd) outlive a killed slurmd; they carry the state folder in their
# environment, not their command line, so find them through the spool folder they use.
for pid in $(pgrep -x slurmstepd 2>/dev/null); do
    if grep -qzF -- "$cluster_dir" "/proc/$pid/environ" 2>/dev/null \
        || ls -l "/proc/$pid/cwd" 2>/dev/null | grep -qF -- "$cluster_dir"; then
        kill -KILL "$pid" 2>/dev/null
    fi
done
rm -f "$cluster_dir"/run/*.pid
[ "${1:-}" = --purge ] && rm -rf "$cluster_dir"
exit 0
