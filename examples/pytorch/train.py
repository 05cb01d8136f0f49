#!/usr/bin/env python3
"""DDP training with numbered torch.distributed.checkpoint (DCP) saves that autoheal resumes.

Run by examples/pytorch/train.sbatch, one process per GPU, under srun (rank and world size come
from SLURM_PROCID / SLURM_NTASKS; MASTER_ADDR and MASTER_PORT from the batch script).

Saves go to CKPT_DIR/step_00000500, step_00001000, ...: a directory of *.distcp shards whose
.metadata file DCP writes last, once every rank has written its part. autoheal calls such a
directory complete only when .metadata is there and not empty, so a save cut off by a failure
is never resumed from. On a restart AUTOHEAL_RESUME_CHECKPOINT is the newest complete one.
"""
import argparse
import os
import re
import shutil

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel

STEP_DIR = re.compile(r"^step_(\d+)$")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ckpt-dir", required=True, help="the sbatch --ckpt-dir folder")
    p.add_argument("--steps", type=int, default=20000, help="total optimizer steps")
    p.add_argument("--save-every", type=int, default=500, help="steps between saves")
    p.add_argument("--keep", type=int, default=3, help="complete saves to keep (0: all)")
    p.add_argument("--batch-size", type=int, default=64)
    return p.parse_args()


def init_distributed():
    rank = int(os.environ.get("SLURM_PROCID", os.environ.get("RANK", "0")))
    world = int(os.environ.get("SLURM_NTASKS", os.environ.get("WORLD_SIZE", "1")))
    local = int(os.environ.get("SLURM_LOCALID", os.environ.get("LOCAL_RANK", "0")))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world)
    return rank, world, device


def build_model(device):
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(device)
    return model


def step_dir(ckpt_dir, step):
    return os.path.join(ckpt_dir, f"step_{step:08d}")


def resume(model, optimizer):
    """Loads AUTOHEAL_RESUME_CHECKPOINT in place; returns the step to start from."""
    path = os.environ.get("AUTOHEAL_RESUME_CHECKPOINT")
    fmt = os.environ.get("AUTOHEAL_CHECKPOINT_FORMAT")
    if not path:
        return 0
    if fmt != "torch-dcp":
        raise SystemExit(f"{path} is a {fmt} checkpoint; this script reads torch-dcp saves")
    match = STEP_DIR.match(os.path.basename(path))
    if match is None:
        raise SystemExit(f"{path}: expected a step_NNNNNNNN directory")
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=path)  # every rank reads what it needs
    set_state_dict(model, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    return int(match.group(1))


def save(model, optimizer, ckpt_dir, step, keep, rank):
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=step_dir(ckpt_dir, step))
    # dcp.save returns on every rank after .metadata is written: the save is complete.
    if keep > 0 and rank == 0:
        saves = sorted(int(m.group(1)) for m in map(STEP_DIR.match, os.listdir(ckpt_dir)) if m)
        for old in saves[:-keep]:
            shutil.rmtree(step_dir(ckpt_dir, old), ignore_errors=True)
    dist.barrier()


def batch(step, rank, batch_size, device):
    # Deterministic per (step, rank): a resumed run sees the data it would have seen.
    g = torch.Generator().manual_seed(step * 100003 + rank)
    x = torch.randn(batch_size, 1024, generator=g)
    return x.to(device), x.flip(-1).to(device)


def main():
    args = parse_args()
    rank, world, device = init_distributed()
    model = DistributedDataParallel(build_model(device),
                                    device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    start = resume(model, optimizer)
    if rank == 0:
        restarts = os.environ.get("AUTOHEAL_RESTART_COUNT", "0")
        print(f"world={world} restarts={restarts} starting at step {start}", flush=True)
    loss_fn = nn.MSELoss()
    for step in range(start, args.steps):
        x, y = batch(step, rank, args.batch_size, device)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        done = step + 1
        if rank == 0 and done % 100 == 0:
            print(f"step {done} loss {loss.item():.4f}", flush=True)
        if done % args.save_every == 0 or done == args.steps:
            save(model, optimizer, args.ckpt_dir, done, args.keep, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
