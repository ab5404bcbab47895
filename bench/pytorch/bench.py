#!/usr/bin/python3
"""endure.checkpoint against torch.save / torch.load, on the same machine, in the same run,
with the same state: a ~125M-parameter transformer language model's weights and its AdamW
state (after one step), CPU, fp32, in one folder on the machine's disk.

Part 1, one process (every core):
  torch.save           the call, and the call + fsync (durable), median of --repeat
  save() stall         endure's synchronous save: the copy of the state into the
                       engine's staging slot (after two warm-up saves touch the slots)
  overlapped stall     save(overlapped=True)'s call, then one forward and backward of the
                       model (the copy runs beside it), then what wait_copied() still waits
                       for: what a training step pays before its optimizer step
  durable              from save() until wait(): the background write, fsynced, committed
  torch.load           torch.load + model.load_state_dict + optimizer.load_state_dict, the
                       page cache dropped first (root), vs endure's load() into the same
                       model and optimizer, in place, every chunk verified, cache dropped too;
                       and the disk's own rate: endure's shard file read through, cold
  targets: overlapped stall <= 1/20 of torch.save's call; restore >= 2x torch.load's speed
Part 2, DDP over Gloo, --ranks processes (one thread each) on 127.0.0.1, the same model on
  every rank, random tokens, two runs: blocks of --block steps taking turns between modes
  for --rounds rounds, the first step of each block left out (the last block's background
  writes spill into it). The copy run: torch.optim.AdamW without checkpoints, and with a
  Checkpointer.save(overlapped=True) of each rank's whole state every step. The in-place
  run: torch.optim.AdamW without checkpoints, endure.inplace.AdamW without, and with its
  save() every step (nothing copied). Saves go to the memory tier alone while any rank's
  disk is still busy or resting (disk_duty --disk-duty, 0.25). cost = a round's mean step
  time with saves / without - 1, the median over rounds (the mean of all beside it)
                                                                     target <= 2 %

    /usr/bin/python3 bench/pytorch/bench.py --dir /var/tmp/x            # bench/pytorch/run.sh
    /usr/bin/python3 bench/pytorch/bench.py --dir /var/tmp/x --smoke    # a small model: works?

stdout: a table, then as its last line one JSON object with every figure and ratio.
"""

import argparse
import ctypes
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402

import endure.checkpoint  # noqa: E402

# ~125M parameters: 12 pre-norm layers of width 768 (85.1M) and untied 26000-token
# embedding and head (40.0M).
FULL = dict(vocab=26000, dim=768, layers=12, heads=12, ffn=3072, seq=64, batch=2)
SMOKE = dict(vocab=1000, dim=64, layers=2, heads=4, ffn=256, seq=16, batch=2)


class LanguageModel(torch.nn.Module):
    def __init__(self, vocab, dim, layers, heads, ffn, **_):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, ffn, dropout=0.0, batch_first=True,
                                                 norm_first=True)
        self.layers = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):  # (B, T) -> (B, T, vocab)
        return self.head(self.norm(self.layers(self.embed(tokens))))


def build(config, seed=0):
    torch.manual_seed(seed)
    model = LanguageModel(**config)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)


def forward_backward(model, config, step):
    g = torch.Generator().manual_seed(step)
    tokens = torch.randint(config["vocab"], (config["batch"], config["seq"] + 1), generator=g)
    logits = model(tokens[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, config["vocab"]),
                                             tokens[:, 1:].reshape(-1))
    loss.backward()
    return loss


def state_of(model, optimizer):
    return {"model": model.state_dict(), "optimizer": endure.checkpoint.optimizer_state(optimizer)}


def state_bytes(state):
    total = 0
    for v in _tensors(state):
        total += v.numel() * v.element_size()
    return total


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)


def drop_caches():
    """Drops the page cache (root only), so that a read comes from the disk; False when it
    cannot."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def read_file(path):
    """Reads a file through, 8 MiB at a time; its size."""
    buffer, total = bytearray(8 << 20), 0
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buffer)
            if not n:
                return total
            total += n


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


# -- part 1: one process ------------------------------------------------------------------

def save_and_restore(args, config):
    torch.set_num_threads(os.cpu_count())  # as a training job would: no core left idle
    model, optimizer = build(config)
    forward_backward(model, config, 0)
    optimizer.step()  # AdamW's moments exist from here
    optimizer.zero_grad(set_to_none=True)
    state = state_of(model, optimizer)
    figures = {"params": sum(p.numel() for p in model.parameters()), "state_bytes": state_bytes(state),
               "tensors": sum(1 for _ in _tensors(state))}
    print("state: %d parameters, %d tensors, %.1f MiB (weights + AdamW)" % (
        figures["params"], figures["tensors"], figures["state_bytes"] / 2 ** 20), file=sys.stderr)

    torch_dir, endure_dir = os.path.join(args.dir, "torch"), os.path.join(args.dir, "endure")
    os.makedirs(torch_dir, exist_ok=True)
    ckpt = endure.checkpoint.Checkpointer(endure_dir, rank=0, world=1, keep_last=2)
    step = 0
    for _ in range(2):  # warm-up: the staging slots' pages touched once
        step += 1
        ckpt.save(state, step)
        ckpt.wait()

    rows = {k: [] for k in ("torch_save_s", "torch_save_fsync_s", "save_stall_s", "durable_s",
                            "overlapped_call_s", "overlapped_wait_s", "overlapped_stall_s",
                            "compute_s", "torch_load_s", "endure_load_s", "disk_read_s",
                            "disk_read_bytes")}
    dropped = True
    path = os.path.join(torch_dir, "state.pt")
    for r in range(args.repeat):
        # torch.save, the call and then its fsync.
        with open(path, "wb") as f:
            t, _ = timed(lambda: torch.save({"model": model.state_dict(),
                                             "optimizer": optimizer.state_dict()}, f))
            t_sync, _ = timed(lambda: (f.flush(), os.fsync(f.fileno())))
        rows["torch_save_s"].append(t)
        rows["torch_save_fsync_s"].append(t + t_sync)

        step += 1
        t0 = time.perf_counter()
        ckpt.save(state, step)
        rows["save_stall_s"].append(time.perf_counter() - t0)
        ckpt.wait()
        rows["durable_s"].append(time.perf_counter() - t0)

        step += 1
        call, _ = timed(lambda: ckpt.save(state, step, overlapped=True))
        compute, _ = timed(lambda: forward_backward(model, config, step))
        wait, _ = timed(ckpt.wait_copied)
        model.zero_grad(set_to_none=True)
        ckpt.wait()
        rows["overlapped_call_s"].append(call)
        rows["overlapped_wait_s"].append(wait)
        rows["overlapped_stall_s"].append(call + wait)
        rows["compute_s"].append(compute)

        # Restores into the same model and optimizer, each from a cold page cache.
        dropped = drop_caches() and dropped

        def torch_restore():
            saved = torch.load(path, map_location="cpu")
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
        t, _ = timed(torch_restore)
        rows["torch_load_s"].append(t)
        state = state_of(model, optimizer)  # load_state_dict made the optimizer new tensors
        dropped = drop_caches() and dropped
        pointers = [t.data_ptr() for t in _tensors(state)]
        t, loaded = timed(lambda: ckpt.load(state))
        if loaded != step or [t.data_ptr() for t in _tensors(state)] != pointers:
            raise SystemExit("bench: endure's load did not fill the state in place (step %r)" % loaded)
        rows["endure_load_s"].append(t)
        # The disk's own rate: the same shard read sequentially from a cold cache, 8 MiB at a
        # time into one buffer (as dd bs=8M of=/dev/null).
        dropped = drop_caches() and dropped
        shard = os.path.join(endure_dir, "step-%012d" % step, "rank-00000.shard")
        t, size = timed(lambda: read_file(shard))
        rows["disk_read_s"].append(t)
        rows["disk_read_bytes"].append(size)
        print("round %d: %s" % (r + 1, ", ".join("%s %.3f" % (k, v[-1]) for k, v in rows.items())),
              file=sys.stderr)
    ckpt.close()
    os.remove(path)
    figures.update({k: statistics.median(v) for k, v in rows.items()})
    figures["rounds"] = rows
    figures["page_cache_dropped"] = dropped
    return figures


# -- part 2: DDP --------------------------------------------------------------------------

DDP_MODES = {"copy": ("none", "every"), "inplace": ("none", "inplace_nosave", "inplace")}


def ddp_rank(args, config):
    """One rank of a DDP run taking turns between modes, a block of steps each:
    none            torch.optim.AdamW, no checkpoint
    every           torch.optim.AdamW, Checkpointer.save(overlapped=True) every step
    inplace_nosave  endure.inplace.AdamW (the state in the engine's slots), no checkpoint
    inplace         endure.inplace.AdamW and its save() every step: nothing copied"""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import endure.inplace
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model, optimizer = build(config)
    ckpt = endure.checkpoint.Checkpointer(
        os.path.join(args.dir, "ddp-" + args.ddp_kind), memory=args.memory_dir + "-" + args.ddp_kind,
        rank=rank, world=world, keep_last=2, disk_duty=args.disk_duty)
    inplace = None
    if args.ddp_kind == "inplace":
        inplace = endure.inplace.AdamW(ckpt, model.named_parameters(), lr=1e-4, weight_decay=0.1)
    ddp = DDP(model)
    # The copy kind's state dict (views of the model's and optimizer's tensors); the in-place
    # kind holds none, so that the weights' first memory is freed once they moved.
    state = state_of(model, optimizer) if inplace is None else None
    modes = DDP_MODES[args.ddp_kind]
    step, times = 0, {m: [[] for _ in range(args.rounds)] for m in modes}
    counts = {"saves": 0, "memory_only_saves": 0}

    def tiers():
        busy = torch.tensor([1.0 if ckpt.disk_busy() else 0.0])
        dist.all_reduce(busy)  # ranks agree on a save's tiers
        memory = busy.item() > 0
        counts["saves"] += 1
        counts["memory_only_saves"] += memory
        return memory

    def train_step(mode):
        nonlocal step
        step += 1
        t0 = time.perf_counter()
        forward_backward(ddp, config, 1000 * step + rank)
        if mode.startswith("inplace"):
            inplace.step()
            inplace.zero_grad()
            if mode == "inplace":
                inplace.save(step, memory_only=tiers())
        else:
            ckpt.wait_copied()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if mode == "every":
                ckpt.save(state, step, overlapped=True, tiers="memory" if tiers() else "all")
        dist.barrier()  # a step ends when every rank's has
        return time.perf_counter() - t0

    for _ in range(args.warmup):
        for mode in modes:
            train_step(mode)
    for r in range(args.rounds):
        for mode in modes:
            for i in range(args.block):
                t = train_step(mode)
                if i > 0:
                    times[mode][r].append(t)
    ckpt.flush()
    ckpt.close()
    if rank == 0:
        print(json.dumps(dict(counts, times=times)), flush=True)
    dist.destroy_process_group()


def ddp_run(args, kind):
    """Runs --ranks ranks of ddp_rank(kind); rank 0's figures."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(args.ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
        cmd = [sys.executable, os.path.abspath(__file__), "--ddp-rank", "--ddp-kind", kind,
               "--dir", args.dir, "--memory-dir", args.memory_dir, "--warmup", str(args.warmup),
               "--rounds", str(args.rounds), "--block", str(args.block), "--disk-duty",
               str(args.disk_duty)] + (["--smoke"] if args.smoke else [])
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE))
    out = b""
    try:
        for rank, p in enumerate(procs):
            o, _ = p.communicate(timeout=args.timeout)
            if p.returncode != 0:
                raise SystemExit("bench: DDP rank %d (%s) failed (exit %d)" % (rank, kind, p.returncode))
            if rank == 0:
                out = o
    finally:
        for p in procs:
            p.kill()
    return json.loads(out.decode().strip().splitlines()[-1])


def ddp_loop(args):
    f = {"ddp_ranks": args.ranks, "ddp_disk_duty": args.disk_duty}
    for kind, saving in (("copy", "every"), ("inplace", "inplace")):
        try:
            r = ddp_run(args, kind)
        finally:  # the memory tier's slots, before the next run makes its own
            subprocess.run(["rm", "-rf", args.memory_dir + "-" + kind], check=False)
        rounds = {m: [statistics.mean(t) for t in per_round] for m, per_round in r["times"].items()}
        none = statistics.mean(rounds["none"])
        for mode, per_round in r["times"].items():
            key = mode if mode != "none" else "none_" + kind
            f["ddp_step_s_" + key] = statistics.mean(rounds[mode])
            f["ddp_steps_per_s_" + key] = 1 / f["ddp_step_s_" + key]
            f["ddp_step_times_" + key] = per_round
        f["ddp_cost_" + kind] = f["ddp_step_s_" + saving] / none - 1
        f["ddp_extra_s_" + kind] = f["ddp_step_s_" + saving] - none
        # Each round's modes ran minutes apart at most: their ratio is the figure the
        # machine's drift (other work, a step's own variation) moves least.
        f["ddp_cost_rounds_" + kind] = [a / b - 1 for a, b in zip(rounds[saving], rounds["none"])]
        f["ddp_cost_median_" + kind] = statistics.median(f["ddp_cost_rounds_" + kind])
        f["ddp_saves_" + kind] = r["saves"]
        f["ddp_memory_only_saves_" + kind] = r["memory_only_saves"]
    f["ddp_optimizer_inplace_vs_torch"] = (f["ddp_step_s_inplace_nosave"] /
                                           f["ddp_step_s_none_inplace"] - 1)
    # The saves alone, the same optimizer with and without them.
    f["ddp_cost_inplace_saves_only"] = (f["ddp_step_s_inplace"] /
                                        f["ddp_step_s_inplace_nosave"] - 1)
    f["ddp_cost_rounds_inplace_saves_only"] = [
        statistics.mean(a) / statistics.mean(b) - 1
        for a, b in zip(f["ddp_step_times_inplace"], f["ddp_step_times_inplace_nosave"])]
    f["ddp_cost_median_inplace_saves_only"] = statistics.median(
        f["ddp_cost_rounds_inplace_saves_only"])
    return f


# -- the report ---------------------------------------------------------------------------

def report(f, args):
    f["stall_ratio"] = f["overlapped_stall_s"] / f["torch_save_s"]
    f["stall_ratio_worst"] = max(f["rounds"]["overlapped_stall_s"]) / f["torch_save_s"]
    f["save_stall_ratio"] = f["save_stall_s"] / f["torch_save_s"]
    f["restore_speedup"] = f["torch_load_s"] / f["endure_load_s"]
    f["disk_read_gb_s"] = f["disk_read_bytes"] / f["disk_read_s"] / 1e9
    f["endure_load_of_disk_read"] = f["disk_read_s"] / f["endure_load_s"]
    f["torch_load_of_disk_read"] = f["disk_read_s"] / f["torch_load_s"]
    f["targets"] = {"stall_ratio_max": 1 / 20, "restore_speedup_min": 2.0, "ddp_cost_max": 0.02}
    f["met"] = {"stall": f["stall_ratio"] <= 1 / 20, "restore": f["restore_speedup"] >= 2.0,
                "ddp_cost_copy": f["ddp_cost_median_copy"] <= 0.02,
                "ddp_cost_inplace": f["ddp_cost_median_inplace"] <= 0.02,
                "ddp_cost_inplace_saves_only": f["ddp_cost_median_inplace_saves_only"] <= 0.02}
    gib = f["state_bytes"] / 2 ** 30
    rows = [
        ("state (weights + AdamW)", "%.2f GiB, %d tensors" % (gib, f["tensors"]), ""),
        ("torch.save (call)", "%.3f s" % f["torch_save_s"], "peer"),
        ("torch.save + fsync", "%.3f s" % f["torch_save_fsync_s"], ""),
        ("endure save() stall (copy)", "%.3f s" % f["save_stall_s"],
         "%.3f of torch.save" % f["save_stall_ratio"]),
        ("endure overlapped stall", "%.4f s" % f["overlapped_stall_s"],
         "%.4f of torch.save (target <= 0.05); worst round %.4f"
         % (f["stall_ratio"], f["stall_ratio_worst"])),
        ("  its call / wait_copied", "%.4f / %.4f s" % (f["overlapped_call_s"], f["overlapped_wait_s"]),
         "after a forward+backward of %.2f s" % f["compute_s"]),
        ("endure save, durable", "%.3f s" % f["durable_s"], "in the background"),
        ("torch.load + load_state_dict", "%.3f s" % f["torch_load_s"], "peer"),
        ("endure load (in place)", "%.3f s" % f["endure_load_s"],
         "%.2fx torch.load (target >= 2)" % f["restore_speedup"]),
        ("  the disk's own read of it", "%.3f s" % f["disk_read_s"],
         "%.2f GB/s; endure's load at %.0f %% of it, torch.load at %.0f %%"
         % (f["disk_read_gb_s"], 100 * f["endure_load_of_disk_read"],
            100 * f["torch_load_of_disk_read"])),
    ]
    for kind, saving, what in (("copy", "every", "save(overlapped) every step"),
                               ("inplace", "inplace", "endure.inplace.AdamW, save every step")):
        rows += [
            ("DDP steps/s, torch AdamW, none", "%.4f" % f["ddp_steps_per_s_none_" + kind],
             "%d ranks x 1 thread, %s run" % (f["ddp_ranks"], kind)),
            ("DDP steps/s, " + what, "%.4f" % f["ddp_steps_per_s_" + saving],
             "cost %.2f %% (rounds' median; mean %.2f %%, %+.3f s a step; target <= 2 %%); "
             "%d of %d saves memory only"
             % (100 * f["ddp_cost_median_" + kind], 100 * f["ddp_cost_" + kind],
                f["ddp_extra_s_" + kind], f["ddp_memory_only_saves_" + kind],
                f["ddp_saves_" + kind])),
        ]
    rows.append(("DDP steps/s, endure.inplace.AdamW, none",
                 "%.4f" % f["ddp_steps_per_s_inplace_nosave"],
                 "%+.2f %% step time vs torch AdamW; its saves alone cost %.2f %% (rounds' median)"
                 % (100 * f["ddp_optimizer_inplace_vs_torch"],
                    100 * f["ddp_cost_median_inplace_saves_only"])))
    width = max(len(r[0]) for r in rows)
    print("bench/pytorch%s: torch %s, %s, page cache %s, load average %s" % (
        " (smoke: not a measurement)" if args.smoke else "", torch.__version__, args.dir,
        "dropped before each restore" if f["page_cache_dropped"] else "NOT dropped (not root)",
        " ".join("%.2f" % x for x in os.getloadavg())))
    for name, value, note in rows:
        print("  %-*s  %-22s %s" % (width, name, value, note))
    print(json.dumps(f, sort_keys=True))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True, help="a folder on the disk (not tmpfs)")
    p.add_argument("--memory-dir",
                   help="the DDP part's memory tiers' prefix (default /dev/shm/endure-bench-PID)")
    p.add_argument("--smoke", action="store_true", help="a small model, one round: checks the bench")
    p.add_argument("--repeat", type=int, default=3, help="rounds of part 1 (medians)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=4)
    p.add_argument("--timeout", type=float, default=1800, help="seconds for the DDP part")
    p.add_argument("--disk-duty", type=float, default=0.25,
                   help="the DDP part's disk_duty (endure-train's default, 0.25)")
    p.add_argument("--ddp-rank", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ddp-kind", choices=sorted(DDP_MODES), help=argparse.SUPPRESS)
    args = p.parse_args()
    config = SMOKE if args.smoke else FULL
    if args.smoke:
        args.repeat, args.rounds, args.block, args.warmup = 1, 1, 2, 1
    if args.ddp_rank:
        return ddp_rank(args, config)
    args.memory_dir = args.memory_dir or "/dev/shm/endure-bench-%d" % os.getpid()
    try:
        figures = save_and_restore(args, config)
        # glibc keeps the heap part 1 freed; give it back before the DDP ranks need it.
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        figures.update(ddp_loop(args))
    finally:
        for kind in DDP_MODES:
            subprocess.run(["rm", "-rf", args.memory_dir + "-" + kind], check=False)
    figures["config"] = config
    figures["threads_part1"] = torch.get_num_threads()
    figures["openblas_coretype"] = os.environ.get("OPENBLAS_CORETYPE", "")
    report(figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
