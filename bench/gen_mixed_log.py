#!/usr/bin/env python3
"""Writes a deterministic mixed GPU-node log of an exact size, for the classify benchmark.

    bench/gen_mixed_log.py [--seed N] [--fault-rate R] SIZE_BYTES OUTPUT

Most lines are the ordinary traffic of a training node: dmesg kernel chatter, journal lines
(systemd, kernel, sshd, slurmd), PyTorch training progress, NCCL INFO lines and slurmd's own
log. Some of them are near misses on purpose (NVRM lines that are not Xids, NCCL lines that
are not warnings) so that a literal prefilter sees plenty of false candidates. About one line
in ten thousand (--fault-rate) is a fault line: an Xid, a NCCL watchdog timeout, a machine
check, an NVMe timeout, an InfiniBand completion error, and so on.

Speed: a pool of a few thousand pre-rendered lines is built once; the output is written as
large blocks of lines drawn from it (random.choices), so 1 GiB takes a few seconds. The same
seed, size and generator version always give the same bytes.
"""

import argparse
import os
import random
import sys

GENERATOR_VERSION = 1
BLOCK_LINES = 32768  # about 3 MiB of text per write

HOSTS = ["gpu-node%02d" % i for i in range(1, 33)] + ["node17", "dgx-a100-04", "h100-r2-n7"]
PCI = ["0000:%02x:00" % b for b in (0x18, 0x2A, 0x3A, 0x3B, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)]
NVME = ["nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"]
NICS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]
ETH = ["eno1", "eno2", "ens1f0np0", "ibp12s0", "ibp75s0", "enp170s0f0"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
UNITS = [
    "systemd-tmpfiles-clean.service", "logrotate.service", "man-db.service",
    "apt-daily.service", "fstrim.service", "nvidia-persistenced.service",
    "dcgm.service", "slurmd.service", "munge.service", "sshd.service",
    "session-%d.scope", "user@%d.service", "prometheus-node-exporter.service",
    "nvidia-fabricmanager.service", "rasdaemon.service", "chrony.service",
]
UNIT_DESCS = {
    "systemd-tmpfiles-clean.service": "Cleanup of Temporary Directories",
    "logrotate.service": "Rotate log files",
    "man-db.service": "Daily man-db regeneration",
    "apt-daily.service": "Daily apt download activities",
    "fstrim.service": "Discard unused blocks on filesystems from /etc/fstab",
    "nvidia-persistenced.service": "NVIDIA Persistence Daemon",
    "dcgm.service": "NVIDIA DCGM service",
    "slurmd.service": "Slurm node daemon",
    "munge.service": "MUNGE authentication service",
    "sshd.service": "OpenBSD Secure Shell server",
    "prometheus-node-exporter.service": "Prometheus exporter for machine metrics",
    "nvidia-fabricmanager.service": "NVIDIA fabric manager service",
    "rasdaemon.service": "RAS daemon to log the RAS events",
    "chrony.service": "chrony, an NTP client/server",
}


class Clock:
    """Monotonic-ish timestamps so lines in the pool look like a real day on a node."""

    def __init__(self, rng):
        self.rng = rng
        self.uptime = 12.0  # seconds since boot, for dmesg
        self.epoch = 1711561236  # 2024-03-27 17:40:36 UTC, for journal / slurmd / torch

    def tick(self):
        d = self.rng.expovariate(1 / 0.8)
        self.uptime += d
        self.epoch += d

    def dmesg(self):
        return "[%12.6f]" % self.uptime

    def journal(self):
        t = int(self.epoch)
        day = 27 + (t - 1711497600) // 86400
        sod = (t - 1711497600) % 86400
        return "Mar %2d %02d:%02d:%02d" % (min(day, 31), sod // 3600, sod // 60 % 60, sod % 60)

    def slurmd(self):
        t = self.epoch
        day = 27 + int(t - 1711497600) // 86400
        sod = (t - 1711497600) % 86400
        return "[2024-03-%02dT%02d:%02d:%02d.%03d]" % (
            min(day, 31), int(sod // 3600), int(sod // 60 % 60), int(sod % 60),
            int((t % 1) * 1000))

    def torch(self):
        t = self.epoch
        sod = (t - 1711497600) % 86400
        return "I0327 %02d:%02d:%02d.%06d" % (
            int(sod // 3600), int(sod // 60 % 60), int(sod % 60), int((t % 1) * 1e6))


def normal_line(rng, clk, host):
    """One ordinary line; the kind is drawn by weight."""
    kind = rng.choices(
        ["dmesg", "journal", "torch", "nccl", "slurmd", "nvrm_ok", "misc"],
        weights=[22, 18, 25, 18, 10, 3, 4])[0]
    clk.tick()
    if kind == "dmesg":
        return clk.dmesg() + " " + dmesg_body(rng)
    if kind == "journal":
        return "%s %s %s" % (clk.journal(), host, journal_body(rng, clk))
    if kind == "torch":
        return torch_line(rng, clk)
    if kind == "nccl":
        return nccl_info(rng, host)
    if kind == "slurmd":
        return "%s %s" % (clk.slurmd(), slurmd_body(rng))
    if kind == "nvrm_ok":
        return clk.dmesg() + " " + nvrm_ok(rng)
    return misc_line(rng, clk, host)


def dmesg_body(rng):
    r = rng.randrange(20)
    dev = rng.choice(NVME)
    eth = rng.choice(ETH)
    if r == 0:
        return "EXT4-fs (%sp2): mounted filesystem with ordered data mode. Quota mode: none." % dev
    if r == 1:
        return "IPv6: ADDRCONF(NETDEV_CHANGE): %s: link becomes ready" % eth
    if r == 2:
        return "%s: Link is Up - %dGbps/Full - flow control off" % (
            eth, rng.choice([25, 100, 200, 400]))
    if r == 3:
        return "audit: type=1400 audit(%d.%03d:%d): apparmor=\"STATUS\" operation=\"profile_load\" " \
               "profile=\"unconfined\" name=\"/usr/bin/man\" pid=%d comm=\"apparmor_parser\"" % (
                   1711561236 + rng.randrange(86400), rng.randrange(1000), rng.randrange(9999),
                   rng.randrange(300, 65000))
    if r == 4:
        return "mlx5_core 0000:%02x:00.%d: mlx5_cmd_out_err:838:(pid %d): QUERY_VPORT_COUNTER(0x770) " \
               "op_mod(0x0) failed, status bad parameter(0x3), syndrome (0x%06x), err(-22)" % (
                   rng.randrange(256), rng.randrange(2), rng.randrange(100, 9000),
                   rng.randrange(1 << 24))
    if r == 5:
        return "mlx5_core 0000:%02x:00.0 %s: Link up" % (rng.randrange(256), rng.choice(ETH))
    if r == 6:
        return "nvme %s: %d/0/0 default/read/poll queues" % (dev[:5], rng.choice([32, 64, 128]))
    if r == 7:
        return "XFS (md%d): Ending clean mount" % rng.randrange(4)
    if r == 8:
        return "docker0: port %d(veth%07x) entered forwarding state" % (
            rng.randrange(1, 9), rng.randrange(1 << 28))
    if r == 9:
        return "perf: interrupt took too long (%d > %d), lowering kernel.perf_event_max_sample_rate to %d" % (
            rng.randrange(2500, 9000), rng.randrange(2500, 9000), rng.choice([63000, 50000, 39750]))
    if r == 10:
        return "systemd-journald[%d]: Data hash table of /var/log/journal/%032x/system.journal has a fill level at %d.%d (%d of %d items), suggesting rotation." % (
                rng.randrange(300, 900), rng.getrandbits(128), rng.randrange(60, 80),
                rng.randrange(10), rng.randrange(10 ** 5, 10 ** 6), rng.randrange(10 ** 6, 2 * 10 ** 6))
    if r == 11:
        return "infiniband %s: mlx5_ib_add: mlx5 IB device registered" % rng.choice(NICS)
    if r == 12:
        return "ACPI: \\_SB_.PCI0.RP%02d.PXSX: ACPI Error AE_NOT_FOUND, While resolving a named reference" % (
            rng.randrange(1, 20)) if rng.random() < 0.3 else \
            "pci 0000:%02x:00.0: [10de:%04x] type 00 class 0x030200" % (
                rng.randrange(256), rng.choice([0x20b0, 0x20b2, 0x2330, 0x2335]))
    if r == 13:
        return "Lustre: %s-OST%04x-osc-ffff%08x: Connection restored to 10.%d.%d.%d@o2ib (at 10.%d.%d.%d@o2ib)" % (
            rng.choice(["scratch", "home", "proj"]), rng.randrange(64), rng.getrandbits(32),
            rng.randrange(256), rng.randrange(256), rng.randrange(256),
            rng.randrange(256), rng.randrange(256), rng.randrange(256))
    if r == 14:
        return "TCP: request_sock_TCP: Possible SYN flooding on port %d. Sending cookies.  Check SNMP counters." % (
            rng.randrange(1024, 65535))
    if r == 15:
        return "usb %d-%d: new high-speed USB device number %d using xhci_hcd" % (
            rng.randrange(1, 4), rng.randrange(1, 8), rng.randrange(2, 20))
    if r == 16:
        return "cgroup: fork rejected by pids controller in /system.slice/slurmstepd.scope/job_%d" % (
            rng.randrange(10 ** 5, 10 ** 7)) if rng.random() < 0.2 else \
            "overlayfs: upper fs does not support RENAME_WHITEOUT."
    if r == 17:
        return "EXT4-fs (%sp1): re-mounted. Opts: errors=remount-ro. Quota mode: none." % dev
    if r == 18:
        return "nvidia-uvm: Loaded the UVM driver, major device number %d." % rng.randrange(500, 512)
    return "NET: Registered PF_ALG protocol family" if rng.random() < 0.5 else \
        "Adding %dk swap on /dev/%sp3.  Priority:-2 extents:1 across:%dk SSFS" % (
            rng.randrange(10 ** 6, 10 ** 7), dev, rng.randrange(10 ** 6, 10 ** 7))


def journal_body(rng, clk):
    r = rng.randrange(12)
    if r <= 3:
        unit = rng.choice(UNITS)
        if "%d" in unit:
            unit = unit % rng.randrange(1000, 60000)
        desc = UNIT_DESCS.get(unit, "Session %d of User slurm" % rng.randrange(1, 9999))
        verb = rng.choice(["Started", "Starting", "Finished", "Stopped", "Deactivated successfully"])
        if verb == "Deactivated successfully":
            return "systemd[1]: %s: Deactivated successfully." % unit
        return "systemd[1]: %s %s." % (verb, desc)
    if r == 4:
        return "kernel: %s %s" % (clk.dmesg(), dmesg_body(rng))
    if r == 5:
        return "sshd[%d]: Accepted publickey for %s from 10.%d.%d.%d port %d ssh2: ED25519 SHA256:%s" % (
            rng.randrange(1000, 99999), rng.choice(["root", "slurm", "alice", "bob", "svc-ml"]),
            rng.randrange(256), rng.randrange(256), rng.randrange(256), rng.randrange(1024, 65535),
            "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                    for _ in range(43)))
    if r == 6:
        return "systemd-logind[%d]: New session %d of user %s." % (
            rng.randrange(500, 2000), rng.randrange(1, 99999), rng.choice(["alice", "bob", "svc-ml"]))
    if r == 7:
        return "slurmd[%d]: slurmd: launch task StepId=%d.%d request from UID:%d GID:%d HOST:10.%d.%d.%d PORT:%d" % (
            rng.randrange(1000, 5000), rng.randrange(10 ** 5, 10 ** 7), rng.randrange(0, 8),
            rng.randrange(1000, 60000), rng.randrange(1000, 60000), rng.randrange(256),
            rng.randrange(256), rng.randrange(256), rng.randrange(1024, 65535))
    if r == 8:
        return "nv-hostengine[%d]: DCGM field %d value %d for GPU %d" % (
            rng.randrange(1000, 5000), rng.choice([150, 155, 203, 252, 1001]),
            rng.randrange(100000), rng.randrange(8))
    if r == 9:
        return "chronyd[%d]: Selected source 10.%d.%d.%d (ntp%d.cluster)" % (
            rng.randrange(500, 2000), rng.randrange(256), rng.randrange(256), rng.randrange(256),
            rng.randrange(1, 4))
    if r == 10:
        return "CRON[%d]: (root) CMD (/usr/lib/prometheus/node-exporter/%s > /dev/null 2>&1)" % (
            rng.randrange(1000, 99999), rng.choice(["nvme_metrics.sh", "ipmitool", "smartmon.sh"]))
    return "nvidia-persistenced[%d]: device %s.0 - persistence mode enabled." % (
        rng.randrange(1000, 5000), rng.choice(PCI))


def torch_line(rng, clk):
    rank = rng.randrange(64)
    step = rng.randrange(1, 200000)
    r = rng.randrange(10)
    if r <= 5:
        return "[rank%d]:step %d loss=%.2f lr=%s tokens/s=%d" % (
            rank, step, rng.uniform(1.2, 9.5), rng.choice(["3e-4", "1e-4", "6e-5", "2.5e-4"]),
            rng.randrange(20000, 90000))
    if r == 6:
        return "%s %d train.py:%d] epoch %d iter %d/%d | elapsed %.1f ms | grad_norm %.3f | mem %.1f GiB" % (
            clk.torch(), rng.randrange(1000, 99999), rng.randrange(100, 900), rng.randrange(10),
            step, 200000, rng.uniform(300, 1500), rng.uniform(0.1, 4), rng.uniform(20, 79))
    if r == 7:
        return "[rank%d]: [%s] checkpoint saved to /scratch/ckpt/run%03d/step_%08d.pt (%.2f s)" % (
            rank, clk.torch(), rng.randrange(1000), step, rng.uniform(2, 90))
    if r == 8:
        return "[rank%d]:/opt/venv/lib/python3.11/site-packages/torch/distributed/fsdp/_init_utils.py:%d: " \
               "UserWarning: FSDP is switching to use `NO_SHARD` instead of ShardingStrategy.FULL_SHARD " \
               "since the world size is 1." % (rank, rng.randrange(300, 500))
    return "%s | rank %d | iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | " \
           "learning rate: %.3E | global batch size: %4d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f |" % (
               clk.torch(), rank, step, 500000, step * 1024, rng.uniform(400, 2000),
               rng.uniform(1e-5, 3e-4), 1024, rng.uniform(1.5, 3.5), 1.0, rng.uniform(0.1, 2))


def nccl_info(rng, host):
    pid = rng.randrange(1000, 99999)
    tid = pid + rng.randrange(1, 200)
    dev = rng.randrange(8)
    pre = "%s:%d:%d [%d] NCCL INFO " % (host, pid, tid, dev)
    r = rng.randrange(10)
    if r <= 3:
        a, b = rng.randrange(16), rng.randrange(16)
        return pre + "Channel %02d/%d : %d[%d] -> %d[%d] via %s" % (
            rng.randrange(32), rng.randrange(2), a, a % 8, b, b % 8,
            rng.choice(["P2P/IPC", "P2P/IPC/read", "NET/IB/0/GDRDMA", "NET/IB/3", "SHM/direct/direct"]))
    if r == 4:
        return pre + "Ring %02d : %s" % (rng.randrange(32), " ".join(
            str(rng.randrange(16)) for _ in range(8)))
    if r == 5:
        return pre + "Trees [%d] %d/-1/-1->%d->%d [%d] %d/-1/-1->%d->%d" % (
            rng.randrange(32), rng.randrange(16), rng.randrange(16), rng.randrange(16),
            rng.randrange(32), rng.randrange(16), rng.randrange(16), rng.randrange(16))
    if r == 6:
        return pre + "NET/IB : Using [0]%s:1/IB [1]%s:1/IB [2]%s:1/IB [3]%s:1/IB ; OOB %s:10.%d.%d.%d<0>" % (
            NICS[0], NICS[1], NICS[2], NICS[3], rng.choice(ETH), rng.randrange(256),
            rng.randrange(256), rng.randrange(256))
    if r == 7:
        return pre + "comm 0x%x rank %d nranks %d cudaDev %d nvmlDev %d busId %x0 commId 0x%x - Init COMPLETE" % (
            rng.getrandbits(40), rng.randrange(64), 64, dev, dev, rng.randrange(0x10, 0xff),
            rng.getrandbits(64))
    if r == 8:
        return pre + "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p channels per peer" % (
            rng.choice([16, 24, 32]), 0, rng.choice([0, 16]), 32, rng.choice([1, 2, 4]))
    return pre + "Connected all %s" % rng.choice(["rings", "trees", "NVLS", "CollNet"])


def slurmd_body(rng):
    job = rng.randrange(10 ** 5, 10 ** 7)
    r = rng.randrange(9)
    if r == 0:
        return "Launching batch job %d for UID %d" % (job, rng.randrange(1000, 60000))
    if r == 1:
        return "[%d.batch] done with job" % job
    if r == 2:
        return "task/affinity: task_p_slurmd_batch_request: task_p_slurmd_batch_request: %d" % job
    if r == 3:
        return "task/affinity: batch_bind: job %d CPU input mask for node: 0x%032X" % (
            job, rng.getrandbits(128))
    if r == 4:
        return "debug:  _rpc_terminate_job: uid = %d JobId=%d" % (rng.randrange(0, 1000), job)
    if r == 5:
        return "[%d.%d] task %d (%d) exited with exit code 0." % (
            job, rng.randrange(8), rng.randrange(64), rng.randrange(1000, 99999))
    if r == 6:
        return "gres/gpu: _set_env: gres_list_alloc: gpu devices: 0,1,2,3,4,5,6,7 JobId=%d" % job
    if r == 7:
        return "debug:  credential for job %d revoked" % job
    return "prolog for job %d ran for %d seconds" % (job, rng.randrange(0, 20))


def nvrm_ok(rng):
    """NVRM lines that are not faults: prefilter near misses."""
    r = rng.randrange(5)
    if r == 0:
        return "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.%d.%02d  Sat Mar  2 %02d:%02d:%02d UTC 2024" % (
            rng.randrange(50, 200), rng.randrange(100), rng.randrange(24), rng.randrange(60), rng.randrange(60))
    if r == 1:
        return "NVRM: GPU at PCI:%s: GPU-%08x-%04x-%04x-%04x-%012x" % (
            rng.choice(PCI), rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16),
            rng.getrandbits(16), rng.getrandbits(48))
    if r == 2:
        return "NVRM: GPU Board Serial Number: %013d" % rng.randrange(10 ** 12, 10 ** 13)
    if r == 3:
        return "nvidia-nvswitch%d: open (major=%d)" % (rng.randrange(4), rng.randrange(190, 200))
    return "NVRM: nvidia_open...: minor=%d pid=%d" % (rng.randrange(8), rng.randrange(1000, 99999))


def misc_line(rng, clk, host):
    r = rng.randrange(6)
    if r == 0:
        return "+ srun --ntasks-per-node=8 --gpus-per-node=8 python3 train.py --config configs/%s.yaml" % (
            rng.choice(["llama-7b", "llama-70b", "gpt-1.3b", "vit-h"]))
    if r == 1:
        return "wandb: Run history: loss ▇▆▅▄▃▂▂▁ lr ▁▂▄▆███ step %d" % rng.randrange(10 ** 6)
    if r == 2:
        return "%s %s dcgm-exporter[%d]: time=\"2024-03-27T17:%02d:%02dZ\" level=info msg=\"Collecting metrics\"" % (
            clk.journal(), host, rng.randrange(1000, 9999), rng.randrange(60), rng.randrange(60))
    if r == 3:
        return "Loading checkpoint shards: %3d%%|%s| %d/%d [00:%02d<00:%02d, %.2fit/s]" % (
            rng.randrange(101), "█" * rng.randrange(10), rng.randrange(8), 8, rng.randrange(60),
            rng.randrange(60), rng.uniform(0.1, 5))
    if r == 4:
        return ""
    return "%s %s kernel: [UFW BLOCK] IN=%s OUT= MAC=%s SRC=10.%d.%d.%d DST=10.%d.%d.%d LEN=%d PROTO=TCP SPT=%d DPT=%d" % (
        clk.journal(), host, rng.choice(ETH), ":".join("%02x" % rng.randrange(256) for _ in range(14)),
        rng.randrange(256), rng.randrange(256), rng.randrange(256), rng.randrange(256),
        rng.randrange(256), rng.randrange(256), rng.randrange(40, 1500), rng.randrange(1024, 65535),
        rng.randrange(1, 1024))


def fault_line(rng, clk, host):
    clk.tick()
    pci = rng.choice(PCI)
    pid = rng.randrange(1000, 99999)
    r = rng.randrange(14)
    ts = clk.dmesg()
    if r == 0:
        return "%s NVRM: Xid (PCI:%s): 79, pid=%d, name=python3, GPU has fallen off the bus." % (ts, pci, pid)
    if r == 1:
        return "%s NVRM: Xid (PCI:%s): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit " \
               "error (DBE) has been detected on GPU in the framebuffer at physAddr 0x%x partition %d, " \
               "subpartition %d." % (ts, pci, rng.getrandbits(36), rng.randrange(8), rng.randrange(2))
    if r == 2:
        return "%s NVRM: Xid (PCI:%s): 13, pid=%d, name=python3, Graphics SM Warp Exception on (GPC %d, " \
               "TPC %d, SM %d): Out Of Range Address" % (ts, pci, pid, rng.randrange(8),
                                                        rng.randrange(9), rng.randrange(2))
    if r == 3:
        return "%s NVRM: Xid (PCI:%s): 31, pid=%d, name=pt_main_thread, Ch 0000%04x, intr 00000000. " \
               "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_%d faulted @ 0x7f%x_%08x. Fault is of type " \
               "FAULT_PDE ACCESS_TYPE_VIRT_READ" % (ts, pci, pid, rng.randrange(0x10000), rng.randrange(8),
                                                   rng.getrandbits(24), rng.getrandbits(32))
    if r == 4:
        return "%s NVRM: Xid (PCI:%s): 94, pid=%d, name=python3, Contained: SM (0x1). RST: No, D-RST: No" % (
            ts, pci, pid)
    if r == 5:
        return "%s NVRM: Xid (PCI:%s): 74, pid=%d, name=python3, NVLink: fatal error detected on link %d" \
               "(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)" % (ts, pci, pid, rng.randrange(18))
    if r == 6:
        seq = rng.randrange(1, 20000)
        return "[rank%d]:[E1206 18:44:12.%09d ProcessGroupNCCL.cpp:607] [Rank %d] Watchdog caught " \
               "collective operation timeout: WorkNCCL(SeqNum=%d, OpType=%s, NumelIn=%d, " \
               "NumelOut=%d, Timeout(ms)=600000) ran for %d milliseconds before timing out." % (
                   rng.randrange(64), rng.randrange(10 ** 9), rng.randrange(64), seq,
                   rng.choice(["ALLREDUCE", "ALLGATHER", "_REDUCE_SCATTER_BASE", "BROADCAST"]),
                   rng.randrange(1, 10 ** 6), rng.randrange(1, 10 ** 6), 600000 + rng.randrange(1000))
    if r == 7:
        return "%s mce: [Hardware Error]: Machine check events logged" % ts
    if r == 8:
        return "%s mce: [Hardware Error]: CPU %d: Machine Check: 0 Bank %d: be00000000800400" % (
            ts, rng.randrange(128), rng.randrange(32))
    if r == 9:
        return "%s nvme %s: I/O %d QID %d timeout, aborting" % (
            ts, rng.choice(NVME)[:5], rng.randrange(1024), rng.randrange(1, 64))
    if r == 10:
        return "%s:%d:%d [%d] NCCL WARN NET/IB : Got completion from peer 10.%d.%d.%d<%d> with " \
               "status=12 opcode=%d len=%d vendor err 129 (Send)" % (
                   host, pid, pid + 42, rng.randrange(8), rng.randrange(256), rng.randrange(256),
                   rng.randrange(256), rng.randrange(1024, 65535), rng.randrange(32768),
                   rng.randrange(65536))
    if r == 11:
        return "%s:%d:%d [%d] NCCL WARN Cuda failure 'an illegal memory access was encountered'" % (
            host, pid, pid + 7, rng.randrange(8))
    if r == 12:
        return "%s NVRM: Xid (PCI:%s): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row " \
               "(0x%x) was marked for remapping, reset gpu to activate." % (ts, pci, rng.getrandbits(36))
    return "%s %s slurmd[%d]: error: Node configuration differs from hardware: Gres=gpu:%d(hw) != gpu:8(config)" % (
        clk.journal(), host, rng.randrange(1000, 5000), rng.randrange(0, 8))


def build_pools(rng, normal_count, fault_count):
    clk = Clock(rng)
    normal = []
    for i in range(normal_count):
        host = HOSTS[i % len(HOSTS)] if rng.random() < 0.2 else "node17"
        normal.append(normal_line(rng, clk, host) + "\n")
    faults = [fault_line(rng, clk, "node17") + "\n" for _ in range(fault_count)]
    return normal, faults


def generate(size, out, seed=1, fault_rate=1e-4, pool=6000):
    rng = random.Random(seed)
    normal, faults = build_pools(rng, pool, 400)
    written = 0
    n_faults = 0
    tmp = out + ".tmp"
    with open(tmp, "wb", buffering=0) as f:
        while written < size:
            lines = rng.choices(normal, k=BLOCK_LINES)
            # Fault lines: binomial-ish count per block, at random positions.
            k = int(BLOCK_LINES * fault_rate)
            if rng.random() < BLOCK_LINES * fault_rate - k:
                k += 1
            for _ in range(k):
                lines[rng.randrange(BLOCK_LINES)] = rng.choice(faults)
            data = "".join(lines).encode()
            left = size - written
            if len(data) >= left:
                data = data[:left]
                if left > 0 and not data.endswith(b"\n"):
                    data = data[:-1] + b"\n"
            f.write(data)
            written += len(data)
            n_faults += k
    os.replace(tmp, out)
    return written, n_faults


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size", type=int, help="exact size of the output, in bytes")
    ap.add_argument("output")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fault-rate", type=float, default=1e-4,
                    help="fraction of lines that are fault lines (default 1e-4)")
    args = ap.parse_args()
    if args.size < 0:
        ap.error("size must be >= 0")
    written, n_faults = generate(args.size, args.output, args.seed, args.fault_rate)
    print("gen_mixed_log: wrote %d bytes (about %d fault lines) to %s" % (
        written, n_faults, args.output), file=sys.stderr)


if __name__ == "__main__":
    main()
