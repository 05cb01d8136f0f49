#!/usr/bin/env bash
# Restarts the local cluster's slurmctld keeping its state (jobs, node states), as an admin's
# `systemctl restart slurmctld` would: SIGTERM, wait until it is gone (SIGKILL after 10 s, as
# systemd does after TimeoutStopSec), start it again without -c. Waits until it answers.
# Use: AUTOHEAL_CLUSTER_DIR=... tests/cluster/restart-ctld.sh [DOWN_SECONDS]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export SLURM_CONF=$cluster_dir/etc/slurm.conf
pidfile=$cluster_dir/run/slurmctld.pid
pid=$(cat "$pidfile")
gone() { for _ in $(seq 1 "$1"); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done; return 1; }
kill -TERM "$pid"
if ! gone 100; then
    # Slurm 22.05's slurmctld, stopped while slurmscriptd kills a running EpilogSlurmctld, can
    # wait in slurmscriptd_fini for good (seen in this lab, its state already saved): systemd
    # ends such a stop with SIGKILL.
    log "slurmctld $pid did not stop within 10 s of SIGTERM: SIGKILL, as systemd would"
    kill -KILL "$pid" 2>/dev/null || true
    gone 50 || { log "slurmctld $pid did not stop"; exit 1; }
fi
sleep "${1:-0}"
setsid slurmctld -D -f "$SLURM_CONF" </dev/null >>"$cluster_dir/log/slurmctld.out" 2>&1 &
echo $! >"$pidfile"
for _ in $(seq 1 150); do
    scontrol ping 2>/dev/null | grep -q "is UP" && exit 0
    sleep 0.2
done
log "slurmctld did not answer after its restart"
exit 1
