#!/usr/bin/env python3
"""A small data-parallel PyTorch training script that survives `srun --auto-resume=1`.

Copy it and replace the model and data with your own. What makes it resumable:

  1. It checkpoints to shared storage (/fsx), atomically, so a node that dies mid-save
     leaves the previous checkpoint intact.
  2. At start every rank loads the newest checkpoint that loads, and continues after it;
     the data of each step depends only on (step, rank), so a resumed run sees exactly the
     batches the killed run would have seen.
  3. It finds its peers from Slurm's environment (SLURM_PROCID, SLURM_NTASKS, the first
     host of SLURM_STEP_NODELIST), never from a hard-coded head-node address: after a
     node is replaced, the re-run step gets the same hostnames, and the first of them is
     the rendezvous host.

Run it under srun (see train.sbatch next to it), or by hand with the Slurm variables set:

  SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_STEP_NODELIST=localhost SLURM_JOB_ID=1 \\
      python3 train_ddp.py --ckpt-dir /tmp/ckpt &
  SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_STEP_NODELIST=localhost SLURM_JOB_ID=1 \\
      python3 train_ddp.py --ckpt-dir /tmp/ckpt

`python3 train_ddp.py --self-test` checks the hostlist expansion and prints OK.
"""

import argparse
import copy
import datetime
import json
import os
import re
import socket
import sys
import time

# --------------------------------------------------------------------------------------
# Slurm hostlist expressions, in pure Python (no `scontrol show hostnames` needed).
# --------------------------------------------------------------------------------------


def _split_top_level(expr):
    """Splits on commas that are not inside [...]."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced ']' in hostlist %r" % expr)
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError("unbalanced '[' in hostlist %r" % expr)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand_range_list(body):
    """'0,2-3' -> ['0', '2', '3']; '01-03' -> ['01', '02', '03'] (zero padding kept)."""
    out = []
    for item in body.split(","):
        item = item.strip()
        m = re.fullmatch(r"(\d+)-(\d+)", item)
        if m:
            lo_s, hi_s = m.group(1), m.group(2)
            lo, hi = int(lo_s), int(hi_s)
            if hi < lo:
                raise ValueError("descending range %r in hostlist" % item)
            width = len(lo_s)  # Slurm pads to the width of the lower bound
            out.extend(str(i).zfill(width) for i in range(lo, hi + 1))
        elif re.fullmatch(r"\d+", item):
            out.append(item)
        else:
            raise ValueError("bad range %r in hostlist" % item)
    return out


def _expand_host(pattern):
    """'r[1-2]n[01-02]' -> r1n01 r1n02 r2n01 r2n02 (the last bracket varies fastest)."""
    m = re.search(r"\[([^\[\]]*)\]", pattern)
    if not m:
        return [pattern]
    head, tail = pattern[: m.start()], pattern[m.end():]
    return [head + v + rest
            for v in _expand_range_list(m.group(1))
            for rest in _expand_host(tail)]


def expand_hostlist(expr):
    """Expands a Slurm hostlist expression, in order: 'worker-[0,2-3],controller-0' ->
    ['worker-0', 'worker-2', 'worker-3', 'controller-0']."""
    hosts = []
    for part in _split_top_level(expr):
        hosts.extend(_expand_host(part))
    return hosts


def self_test():
    cases = {
        "worker-[0-3]": ["worker-0", "worker-1", "worker-2", "worker-3"],
        "worker-[0,2-3],controller-0": ["worker-0", "worker-2", "worker-3", "controller-0"],
        "a1,b[01-03]": ["a1", "b01", "b02", "b03"],
        "localhost": ["localhost"],
        "n[8-10]": ["n8", "n9", "n10"],
        "n[08-10]": ["n08", "n09", "n10"],
        "r[1-2]n[01-02]": ["r1n01", "r1n02", "r2n01", "r2n02"],
        "x[1],y[2-3,5],z": ["x1", "y2", "y3", "y5", "z"],
    }
    for expr, want in cases.items():
        got = expand_hostlist(expr)
        if got != want:
            print("FAIL %r: got %r, want %r" % (expr, got, want))
            return 1
    for bad in ("a[1-2", "a]1", "a[3-1]", "a[x]"):
        try:
            expand_hostlist(bad)
        except ValueError:
            continue
        print("FAIL %r: expected ValueError" % bad)
        return 1
    print("OK")
    return 0


# --------------------------------------------------------------------------------------
# Checkpoints: atomic save on shared storage, newest-loadable-first load.
# --------------------------------------------------------------------------------------

CKPT_RE = re.compile(r"^ckpt-(\d{8})\.pt$")
KEEP = 3


def log(rank, msg):
    print("[rank %d] %s" % (rank, msg), file=sys.stderr, flush=True)


def list_checkpoints(ckpt_dir):
    """[(step, path)], newest first. Temp files (.ckpt-*.tmp-*) never match."""
    found = []
    for name in os.listdir(ckpt_dir):
        m = CKPT_RE.match(name)
        if m:
            found.append((int(m.group(1)), os.path.join(ckpt_dir, name)))
    return sorted(found, reverse=True)


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(torch, ckpt_dir, step, model, optimizer, loss, world):
    """Rank 0 only. Writes a temp file in the same directory, fsyncs it, renames it into
    place and fsyncs the directory: a reader sees the whole file or no file."""
    final = os.path.join(ckpt_dir, "ckpt-%08d.pt" % step)
    tmp = os.path.join(ckpt_dir, ".ckpt-%08d.pt.tmp-%d" % (step, os.getpid()))
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "loss": loss,
        "world": world,
    }
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, final)
    fsync_dir(ckpt_dir)
    for _, old in list_checkpoints(ckpt_dir)[KEEP:]:
        try:
            os.remove(old)
        except FileNotFoundError:
            pass


def remove_stale_temp_files(ckpt_dir, rank):
    """Rank 0, before anyone saves: a killed run can leave a half-written temp file."""
    for name in os.listdir(ckpt_dir):
        if name.startswith(".ckpt-") and ".tmp-" in name:
            log(rank, "removing partial checkpoint %s left by a killed run" % name)
            try:
                os.remove(os.path.join(ckpt_dir, name))
            except FileNotFoundError:
                pass


def load_latest_checkpoint(torch, ckpt_dir, model, optimizer, rank):
    """Loads the newest checkpoint that loads without error into model and optimizer.
    Returns (step, loss) of that checkpoint, or (None, None) when there is none."""
    init_model = copy.deepcopy(model.state_dict())
    init_opt = copy.deepcopy(optimizer.state_dict())
    for step, path in list_checkpoints(ckpt_dir):
        try:
            state = torch.load(path, map_location="cpu")
            if not isinstance(state, dict) or state.get("step") != step:
                raise ValueError("step field %r does not match the file name"
                                 % (state.get("step") if isinstance(state, dict) else None))
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            return step, state.get("loss")
        except Exception as e:  # a corrupt, truncated or incompatible file: try the older one
            log(rank, "skipping checkpoint %s: %s: %s"
                % (os.path.basename(path), type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
            model.load_state_dict(init_model)
            optimizer.load_state_dict(init_opt)
    return None, None


# --------------------------------------------------------------------------------------
# Model and data.
# --------------------------------------------------------------------------------------

IN_DIM, HIDDEN, OUT_DIM, BATCH = 32, 128, 8, 64


def make_teacher(torch):
    # A fixed random linear teacher: the same on every rank and in every run.
    g = torch.Generator().manual_seed(0)
    w = torch.randn(IN_DIM, OUT_DIM, generator=g) / IN_DIM ** 0.5
    b = torch.randn(OUT_DIM, generator=g)
    return w, b


def make_batch(torch, teacher, step, rank):
    # Depends only on (step, rank): a resumed run sees exactly the batches it would have.
    g = torch.Generator().manual_seed(1_000_003 * step + 7919 * rank + 12345)
    x = torch.randn(BATCH, IN_DIM, generator=g)
    w, b = teacher
    y = x @ w + b + 0.01 * torch.randn(BATCH, OUT_DIM, generator=g)
    return x, y


def make_model(torch):
    torch.manual_seed(0)  # the same initial weights on every rank (DDP also broadcasts)
    nn = torch.nn
    return nn.Sequential(nn.Linear(IN_DIM, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, OUT_DIM))


# --------------------------------------------------------------------------------------
# Main.
# --------------------------------------------------------------------------------------


def env_int(name, default=None):
    v = os.environ.get(name)
    if v is None or v == "":
        if default is None:
            raise SystemExit("train_ddp.py: %s is not set (run under srun)" % name)
        return default
    return int(v)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ckpt-dir", help="checkpoint directory on shared storage (/fsx)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--ckpt-every", type=int, default=10)
    p.add_argument("--step-seconds", type=float, default=0.05,
                   help="sleep per step, so a test can inject a fault mid-run")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--self-test", action="store_true", help="test the hostlist expansion")
    args = p.parse_args()
    if args.self_test:
        return self_test()
    if not args.ckpt_dir:
        p.error("--ckpt-dir is required")
    if args.ckpt_every < 1:
        p.error("--ckpt-every must be at least 1")

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = env_int("SLURM_PROCID")
    world = env_int("SLURM_NTASKS")
    nodelist = os.environ.get("SLURM_STEP_NODELIST") or os.environ.get("SLURM_JOB_NODELIST")
    if not nodelist:
        raise SystemExit("train_ddp.py: neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set")
    resume_count = env_int("ENDURE_AUTO_RESUME_COUNT", 0)
    resume_reason = os.environ.get("ENDURE_AUTO_RESUME_REASON", "")

    # The rendezvous host is the first host of this step: no hard-coded head node.
    master_host = expand_hostlist(nodelist)[0]
    master_addr = socket.gethostbyname(master_host)
    if os.environ.get("MASTER_PORT"):
        master_port = int(os.environ["MASTER_PORT"])
    else:
        # A re-run step (ENDURE_AUTO_RESUME_COUNT 1, 2, ...) gets a new port, so it never
        # collides with a socket of the killed run that is still in TIME_WAIT.
        master_port = 20000 + env_int("SLURM_JOB_ID", 0) % 10000 + resume_count

    # On an endure local cluster every node shares the host's network namespace and its
    # hostnames resolve to 127.x addresses, so gloo must use the loopback interface. On a
    # real cluster delete this line (gloo then uses the interface of the host's address)
    # or export GLOO_SOCKET_IFNAME=<the NIC between the nodes> before srun.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

    dist.init_process_group(backend="gloo",
                            init_method="tcp://%s:%d" % (master_addr, master_port),
                            rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))

    os.makedirs(args.ckpt_dir, exist_ok=True)
    if rank == 0:
        remove_stale_temp_files(args.ckpt_dir, rank)
    dist.barrier()

    teacher = make_teacher(torch)
    model = make_model(torch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    resumed_from, last_loss = load_latest_checkpoint(torch, args.ckpt_dir, model, optimizer, rank)

    # Every rank read the same file; check that they agree before training on.
    agree = torch.tensor([-1 if resumed_from is None else resumed_from], dtype=torch.int64)
    lo, hi = agree.clone(), agree.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    if lo.item() != hi.item():
        raise SystemExit("train_ddp.py: ranks loaded different checkpoints (steps %d..%d)"
                         % (lo.item(), hi.item()))

    ddp = DDP(model)
    start = 1 if resumed_from is None else resumed_from + 1
    common = {"auto_resume_count": resume_count, "reason": resume_reason}
    if rank == 0:
        print(json.dumps(dict({"start": True, "resumed_from": resumed_from, "world": world,
                               "first_step": start, "steps": args.steps,
                               "master": "%s:%d" % (master_addr, master_port)}, **common)),
              flush=True)

    t0 = time.monotonic()
    saved_step = resumed_from
    loss_value = last_loss
    for step in range(start, args.steps + 1):
        x, y = make_batch(torch, teacher, step, rank)
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()  # DDP averages the gradients over the ranks here
        optimizer.step()

        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        loss_value = mean_loss.item() / world
        if rank == 0:
            print(json.dumps(dict({"step": step, "loss": round(loss_value, 6), "world": world,
                                   "resumed_from": resumed_from}, **common)), flush=True)

        if step % args.ckpt_every == 0 or step == args.steps:
            if rank == 0:
                save_checkpoint(torch, args.ckpt_dir, step, model, optimizer, loss_value, world)
            dist.barrier()  # nobody runs ahead of a checkpoint that is not on disk yet
            saved_step = step
        if args.step_seconds > 0:
            time.sleep(args.step_seconds)

    steps_run = max(args.steps + 1 - start, 0)
    elapsed = time.monotonic() - t0
    dist.barrier()
    if rank == 0:
        print(json.dumps({"done": True, "final_step": max(args.steps, saved_step or 0),
                          "final_loss": None if loss_value is None else round(loss_value, 6),
                          "steps_run": steps_run,
                          "seconds_per_step": round(elapsed / steps_run, 4) if steps_run else None}),
              flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
