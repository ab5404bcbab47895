#!/usr/bin/env python3
"""Data-parallel PyTorch training (DDP over Gloo) that survives `srun --auto-resume=1`,
through endure's Python package: checkpoints with endure.checkpoint, metrics with
endure.report, the rendezvous with endure.distributed.init.

Every --ckpt-every steps (default: every step) each rank saves its state, overlapped with
the next step's forward and backward, to every tier when no rank's disk is still busy and
to the memory tier alone when one is. At start every rank loads the newest step that
verifies, in place, and goes on after it with exactly the batches it would have seen (they
depend only on step and rank), so a resumed run computes the same losses, bit for bit.

    srun --auto-resume=1 python3 train_ddp.py --ckpt-dir /fsx/ckpt-pytorch   # see train.sbatch

Without Slurm, two ranks on one machine:

    for r in 0 1; do RANK=$r WORLD_SIZE=2 python3 train_ddp.py --ckpt-dir /tmp/ckpt & done; wait

Rank 0 prints a JSON line at start (resumed_from, auto_resume_count, reason), one per step
(step, loss) and one at the end (done, final_step, final_loss).
"""

import argparse
import json
import shutil
import sys
import time

import torch
import torch.distributed as dist

import endure
import endure.checkpoint
import endure.distributed

IN_DIM, HIDDEN, OUT_DIM, BATCH = 32, 128, 8, 64


def make_model():
    torch.manual_seed(0)  # the same initial weights on every rank
    nn = torch.nn
    return nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, OUT_DIM))


def make_batch(step, rank):
    # Depends only on (step, rank): a resumed run sees exactly the batches it would have.
    teacher = torch.Generator().manual_seed(0)  # a fixed linear map, the same everywhere
    w = torch.randn(IN_DIM, OUT_DIM, generator=teacher) / IN_DIM ** 0.5
    b = torch.randn(OUT_DIM, generator=teacher)
    g = torch.Generator().manual_seed(1_000_003 * step + 7919 * rank + 12345)
    x = torch.randn(BATCH, IN_DIM, generator=g)
    return x, x @ w + b + 0.01 * torch.randn(BATCH, OUT_DIM, generator=g)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ckpt-dir", required=True, help="checkpoints on shared storage (/fsx)")
    p.add_argument("--memory-dir", help="the memory tier (default /dev/shm/endure-ckpt-JOB)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--ckpt-every", type=int, default=1)
    p.add_argument("--step-seconds", type=float, default=0.05,
                   help="sleep per step, so that there is time to break a node")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--final-state", help="rank 0 writes the final weights, optimizer state and "
                   "data position here, raw, for a byte-for-byte comparison of two runs")
    args = p.parse_args()
    if args.ckpt_every < 1:
        p.error("--ckpt-every must be at least 1")

    task = endure.distributed.init(backend="gloo", timeout_s=120)
    rank, world = task.rank, task.world
    memory_dir = args.memory_dir or "/dev/shm/endure-ckpt-%d" % task.job_id
    ckpt = endure.checkpoint.Checkpointer(args.ckpt_dir, memory=memory_dir, rank=rank, world=world)

    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    # The state, as views of the model's and optimizer's own tensors: a load fills them.
    state = {"model": model.state_dict(),
             "optimizer": endure.checkpoint.optimizer_state(optimizer),
             "data": {"position": 0}, "rng": torch.get_rng_state()}
    resumed_from = ckpt.load(state)
    if resumed_from is not None:
        torch.set_rng_state(state["rng"])
    ddp = endure.distributed.data_parallel(model)  # DDP whose gradient sums resume bit for bit
    first = state["data"]["position"] + 1
    common = {"auto_resume_count": task.resume, "reason": task.resume_reason}
    if rank == 0:
        print(json.dumps(dict(start=True, resumed_from=resumed_from, world=world, first_step=first,
                              steps=args.steps, master="%s:%d" % (task.master_addr, task.master_port),
                              **common)), flush=True)
    endure.report(start=True, resumed_from=resumed_from, world=world, steps=args.steps, **common)

    t0, loss_value = time.monotonic(), None
    for step in range(first, args.steps + 1):
        x, y = make_batch(step, rank)
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()  # DDP averages the gradients over the ranks here
        ckpt.wait_copied()  # the last save's copy is done before the weights change
        optimizer.step()

        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        loss_value = mean_loss.item() / world
        if rank == 0:
            print(json.dumps(dict(step=step, loss=round(loss_value, 6), world=world,
                                  resumed_from=resumed_from, **common)), flush=True)
        endure.report(step=step, loss=loss_value, tokens=BATCH * world)

        if step % args.ckpt_every == 0 or step == args.steps:
            # Ranks agree on a save's tiers: any rank's disk still busy, the memory tier alone.
            busy = torch.tensor([1.0 if ckpt.disk_busy() else 0.0])
            dist.all_reduce(busy)
            tiers = "memory" if busy.item() > 0 else "all"
            state.update(data={"position": step}, rng=torch.get_rng_state())
            started = time.monotonic()
            ckpt.save(state, step, overlapped=True, tiers=tiers)
            endure.report(checkpoint=step, tiers=tiers, stall_ms=(time.monotonic() - started) * 1e3)
        if args.step_seconds > 0:
            time.sleep(args.step_seconds)

    ckpt.flush()  # the last step in every tier, durable
    steps_run = max(args.steps + 1 - first, 0)
    if rank == 0 and args.final_state:
        write_final_state(args.final_state, state)
    dist.barrier()
    if task.local_rank == 0:
        shutil.rmtree(memory_dir, ignore_errors=True)  # the job is done with its memory tier
    if rank == 0:
        print(json.dumps({"done": True, "final_step": args.steps,
                          "final_loss": None if loss_value is None else round(loss_value, 6),
                          "steps_run": steps_run,
                          "seconds_per_step": round((time.monotonic() - t0) / steps_run, 4)
                          if steps_run else None}), flush=True)
    endure.report(done=True, final_step=args.steps)
    ckpt.close()
    dist.destroy_process_group()
    return 0


def write_final_state(path, state):
    """Every tensor's bytes and every plain value, in the state's order."""
    with open(path, "wb") as f:
        def walk(value):
            if isinstance(value, torch.Tensor):
                f.write(value.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
            elif isinstance(value, dict):
                for k in value:
                    f.write(k.encode() + b"\0")
                    walk(value[k])
            elif isinstance(value, (list, tuple)):
                for v in value:
                    walk(v)
            else:
                f.write(repr(value).encode() + b"\0")
        walk(state)


if __name__ == "__main__":
    sys.exit(main())
