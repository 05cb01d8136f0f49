#!/usr/bin/env python3
"""A stand-in for a training job: it takes a step every STEP_SECONDS, writes a checkpoint in
PyTorch's distributed-checkpoint layout every CKPT_EVERY steps (step_N/__0_0.distcp, then
step_N/.metadata last, as torch.distributed.checkpoint does), and resumes from the checkpoint
autoheal names in AUTOHEAL_RESUME_CHECKPOINT. No GPU and no PyTorch needed.

When the file named by DEMO_FAULT_FILE (with "-<restart>" appended) appears, it fails the way a
PyTorch job does when its GPU dies under it (the demo creates that file when it injects the GPU
fault, since the fake GPUs cannot fail a real CUDA call).
"""
import os
import re
import sys
import time

ckpt_dir = os.environ["CKPT_DIR"]
steps = int(os.environ.get("STEPS", "40"))
every = int(os.environ.get("CKPT_EVERY", "5"))
step_seconds = float(os.environ.get("STEP_SECONDS", "0.25"))
restart = os.environ.get("SLURM_RESTART_COUNT", "0")
fault = os.environ.get("DEMO_FAULT_FILE", "") + "-" + restart

step = 0
resume = os.environ.get("AUTOHEAL_RESUME_CHECKPOINT", "")
if resume:
    m = re.search(r"step_(\d+)$", resume)
    step = int(m.group(1)) if m else 0
    print(f"resumed at step {step} from {resume}", flush=True)
    print(f"  AUTOHEAL_RESTART_COUNT={os.environ.get('AUTOHEAL_RESTART_COUNT', '')}", flush=True)
    print(f"  AUTOHEAL_LAST_FAILURE={os.environ.get('AUTOHEAL_LAST_FAILURE', '')}", flush=True)
    print(f"  AUTOHEAL_EXCLUDED_NODES={os.environ.get('AUTOHEAL_EXCLUDED_NODES', '')}", flush=True)
print(f"training on {os.environ.get('SLURM_JOB_NODELIST', '?')} from step {step}", flush=True)

while step < steps:
    time.sleep(step_seconds)
    step += 1
    if step % every == 0:
        d = os.path.join(ckpt_dir, f"step_{step}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "__0_0.distcp"), "w") as f:
            f.write(f"weights at step {step}\n")
        tmp = os.path.join(d, ".metadata.tmp")
        with open(tmp, "w") as f:
            f.write("metadata\n")
        os.rename(tmp, os.path.join(d, ".metadata"))
        print(f"checkpoint {step}", flush=True)
    if os.path.exists(fault):
        print("Traceback (most recent call last):", flush=True)
        print('  File "train.py", line 57, in <module>', flush=True)
        print("RuntimeError: CUDA error: uncorrectable ECC error encountered", flush=True)
        sys.exit(1)
print(f"completed at step {step}", flush=True)
