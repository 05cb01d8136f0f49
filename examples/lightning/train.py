#!/usr/bin/env python3
"""PyTorch Lightning training whose checkpoints autoheal finds and resumes.

ModelCheckpoint writes CKPT_DIR/epoch=E-step=N.ckpt every --save-every steps and keeps last.ckpt
beside them. autoheal recognises both (a .ckpt whose name carries step=N, or last.ckpt) and
calls one complete when the file is not empty; on a restart it exports the newest as
AUTOHEAL_RESUME_CHECKPOINT (the .ckpt file itself) and this script hands it to
Trainer.fit(ckpt_path=...), which restores the model, the optimizer, the loops and the step.

Lightning's own requeue-on-signal is switched off: autoheal requeues the job when the
infrastructure fails, excluding the bad nodes, and Slurm's time limit is the job's own business.
"""
import argparse
import os

import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins.environments import SLURMEnvironment
from torch import nn
from torch.utils.data import DataLoader, Dataset


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ckpt-dir", required=True, help="the sbatch --ckpt-dir folder")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=20000)
    p.add_argument("--save-every", type=int, default=500)
    return p.parse_args()


class Synthetic(Dataset):
    """x -> reversed x, generated from the index so every epoch is the same."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        x = torch.randn(1024, generator=torch.Generator().manual_seed(i))
        return x, x.flip(-1)


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
        self.loss = nn.MSELoss()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss(self.net(x), y)
        self.log("loss", loss, prog_bar=True, sync_dist=True)
        self.log("global_step", float(self.global_step))  # what ModelCheckpoint ranks by
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def resume_path():
    """The checkpoint autoheal chose, or None for a fresh start."""
    path = os.environ.get("AUTOHEAL_RESUME_CHECKPOINT")
    if not path:
        return None
    fmt = os.environ.get("AUTOHEAL_CHECKPOINT_FORMAT")
    if fmt != "lightning":
        raise SystemExit(f"{path} is a {fmt} checkpoint; this script reads Lightning .ckpt files")
    return path


def main():
    args = parse_args()
    checkpoints = ModelCheckpoint(
        dirpath=args.ckpt_dir,
        filename="{epoch}-{step}",       # epoch=0-step=500.ckpt: autoheal reads the step
        every_n_train_steps=args.save_every,
        monitor="global_step",
        mode="max",
        save_top_k=3,                    # keep the 3 newest numbered saves
        save_last=True,                  # last.ckpt, written after the numbered file
    )
    trainer = L.Trainer(
        accelerator="gpu" if torch.cuda.is_available() else "cpu",
        num_nodes=args.nodes,
        devices=args.devices if torch.cuda.is_available() else 1,
        strategy="ddp" if args.nodes * args.devices > 1 else "auto",
        max_steps=args.max_steps,
        callbacks=[checkpoints],
        plugins=[SLURMEnvironment(auto_requeue=False)],
        log_every_n_steps=100,
    )
    data = DataLoader(Synthetic(), batch_size=64, num_workers=4, shuffle=True)
    if trainer.global_rank == 0:
        print(f"restarts={os.environ.get('AUTOHEAL_RESTART_COUNT', '0')} "
              f"resume={resume_path() or 'none'}", flush=True)
    trainer.fit(Regressor(), train_dataloaders=data, ckpt_path=resume_path())


if __name__ == "__main__":
    main()
