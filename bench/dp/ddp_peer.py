#!/usr/bin/python3
"""PyTorch DistributedDataParallel: the peer bench/dp compares endure's data-parallel trainer with.

What it measures: training throughput (tokens/s over all ranks), the median step time, the
last step's loss and each rank's peak resident memory, for the same Llama-2 model endure
trains, with torch's DDP over Gloo on CPU: N ranks as processes on 127.0.0.1, one thread
each, meeting through a file store in a temporary folder.

Why: bench/dp reports endure's tokens/s and memory per rank beside the standard way of doing
the same thing in PyTorch; this is that side, kept in one file so both run on one machine.

The model is the PyTorch reference endure's model is checked against
(tests/train/llama_reference.py: llama2.c's model.py, its init, RoPE on pairs (2i, 2i+1)),
imported rather than copied so the peer trains exactly what endure is verified to compute.
Presets are that file's: stories15M (dim 288, 6 layers, 6 heads, vocab 32000, seq 256,
hidden 768, tied head) and tiny (dim 32, 2 layers, 4 heads, 2 kv heads, vocab 97, seq 16,
hidden 96, untied head, as endure's tiny). AdamW lr 5e-4, betas (0.9, 0.95), eps 1e-5,
weight decay 0.1 on >= 2-D tensors only (as endure), gradients clipped at norm 1.0, fp32,
constant lr. Tokens are random in [0, vocab), seeded per rank, so the loss stays near
ln(vocab) (10.37 for 32000): a check of the init, not of learning.

    /usr/bin/python3 bench/dp/ddp_peer.py --preset tiny --ranks 2 --steps 3   # a check
    /usr/bin/python3 bench/dp/ddp_peer.py --ranks 2 --steps 10 --warmup 2     # a measurement

Flags: --ranks N (2), --steps S timed (10), --warmup W untimed first (2), --batch B per rank
(8), --seq T (the preset's), --bucket-mb (25, DDP's bucket_cap_mb), --bucket-view (DDP's
gradient_as_bucket_view, off as in DDP), --preset, --timeout seconds for the whole run (600).

stdout: only, as its last line, one JSON object; progress and diagnostics go to stderr.
tokens_per_s = ranks * batch * seq * steps / the wall time of the timed steps between two
barriers (the slowest rank's). peak_rss_bytes per rank is getrusage's ru_maxrss;
peak_rss_increase_bytes is that peak less the peak before the model was built (torch and
Gloo loaded), the part training adds. Exit 0 measured, 1 a run failed or timed out (its
processes killed by pid), 2 bad usage.
"""
import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEBIAN_PYTHON = "/usr/bin/python3"  # the interpreter with Debian's python3-torch

# One thread per rank, set before torch loads (here, so the ranks inherit it): torch's
# matmuls run in OpenBLAS's own threads, which torch.set_num_threads does not limit.
os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")

try:
    import torch
except ImportError:
    # `python3` may be another interpreter on PATH (pyenv) without torch: use Debian's.
    here = os.path.realpath(sys.executable)
    if os.path.exists(DEBIAN_PYTHON) and here != os.path.realpath(DEBIAN_PYTHON):
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    sys.stderr.write("ddp_peer: no torch in %s (install python3-torch)\n" % sys.executable)
    sys.exit(1)

sys.path.insert(0, os.path.join(REPO, "tests", "train"))
import llama_reference as ref  # noqa: E402 (needs the path above)


def log(msg):
    sys.stderr.write("[ddp_peer] %s\n" % msg)
    sys.stderr.flush()


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


# ---- one rank (a process of its own, started by the parent below) ----

def worker(rank, cfg):
    import datetime
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    n = cfg["ranks"]
    dist.init_process_group("gloo", init_method="file://" + cfg["store"], rank=rank, world_size=n,
                            timeout=datetime.timedelta(seconds=cfg["timeout"]))
    rss_before_model = peak_rss_bytes()

    torch.manual_seed(0)  # the same weights on every rank (DDP broadcasts rank 0's anyway)
    c = ref.full_config(ref.PRESETS[cfg["preset"]])
    model = ref.Llama(c)
    # The RoPE tables are constant buffers: broadcasting them every forward would add
    # communication endure does not do.
    ddp = DDP(model, bucket_cap_mb=cfg["bucket_mb"], broadcast_buffers=False,
              gradient_as_bucket_view=cfg["bucket_view"])
    opt = ref.configure_adamw(model, dict(beta1=0.9, beta2=0.95, eps=1e-5, weight_decay=0.1))
    for g in opt.param_groups:
        g["lr"] = 5e-4

    B, T, V = cfg["batch"], cfg["seq"], c["vocab_size"]
    total = cfg["warmup"] + cfg["steps"]
    gen = torch.Generator().manual_seed(1000 + rank)  # different data on each rank, repeatable
    batches = [torch.randint(0, V, (B, T + 1), generator=gen) for _ in range(total)]

    def step(toks):
        loss = ddp(toks[:, :-1], toks[:, 1:])
        loss.backward()  # DDP all-reduces (averages) the gradients in buckets during backward
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    losses, times = [], []
    for s in range(cfg["warmup"]):
        losses.append(step(batches[s]))
    dist.barrier()  # every rank starts the timed steps together
    t0 = time.perf_counter()
    for s in range(cfg["warmup"], total):
        a = time.perf_counter()
        losses.append(step(batches[s]))
        times.append(time.perf_counter() - a)
        if rank == 0:
            log("step %d/%d loss %.4f %.0f ms" % (s + 1, total, losses[-1], times[-1] * 1e3))
    dist.barrier()  # and the wall time ends when the slowest has finished
    wall = time.perf_counter() - t0

    mine = dict(rank=rank, wall_s=wall, step_s=times, loss_first=losses[0], loss_last=losses[-1],
                peak_rss_bytes=peak_rss_bytes(), rss_before_model=rss_before_model,
                threads=torch.get_num_threads())
    every = [None] * n
    dist.all_gather_object(every, mine)
    if rank == 0:
        write_result(cfg, c, model, every)
    # No destroy_process_group(): tearing down Gloo's process group (and DDP's reducer that
    # holds it) hung a rank about one run in six here (pytorch/pytorch#75097). The caller
    # ends the process with os._exit while these are still alive; nothing is left to flush.
    return ddp, opt


def write_result(cfg, c, model, every):
    tokens_per_rank = cfg["batch"] * cfg["seq"] * cfg["steps"]
    wall = max(r["wall_s"] for r in every)
    pooled = [t for r in every for t in r["step_s"]]
    out = {
        "peer": "pytorch-ddp", "torch": torch.__version__, "backend": "gloo",
        "preset": cfg["preset"], "params": sum(p.numel() for p in model.parameters()),
        "ranks": cfg["ranks"], "batch": cfg["batch"], "seq": cfg["seq"],
        "threads_per_rank": every[0]["threads"], "bucket_mb": cfg["bucket_mb"],
        "gradient_as_bucket_view": cfg["bucket_view"], "warmup": cfg["warmup"],
        "steps": cfg["steps"], "wall_s": round(wall, 4),
        "tokens_per_s": round(cfg["ranks"] * tokens_per_rank / wall, 2),
        "tokens_per_s_per_rank": [round(tokens_per_rank / r["wall_s"], 2) for r in every],
        "step_ms_median": round(statistics.median(pooled) * 1e3, 3),
        "step_ms_median_per_rank": [round(statistics.median(r["step_s"]) * 1e3, 3) for r in every],
        "peak_rss_bytes": [r["peak_rss_bytes"] for r in every],
        "peak_rss_increase_bytes": [r["peak_rss_bytes"] - r["rss_before_model"] for r in every],
        # the first step's (a warm-up one if any): about ln(vocab) after a correct init
        "loss_first": round(statistics.mean(r["loss_first"] for r in every), 6),
        "loss": round(statistics.mean(r["loss_last"] for r in every), 6),
    }
    tmp = cfg["result"] + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(out, separators=(",", ":")) + "\n")
    os.replace(tmp, cfg["result"])  # the parent sees a whole result or none


# ---- the parent: starts the ranks, bounds the run, relays rank 0's result ----

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    ap.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    ap.add_argument("--seq", type=int, default=0, help="tokens a sequence (default: the preset's)")
    ap.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb")
    ap.add_argument("--bucket-view", action="store_true", help="DDP's gradient_as_bucket_view")
    ap.add_argument("--preset", default="stories15M", choices=sorted(ref.PRESETS))
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds for the whole run")
    ap.add_argument("--_worker", type=str, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    max_seq = ref.PRESETS[a.preset]["seq_len"]
    a.seq = a.seq or max_seq
    checks = (("--ranks", a.ranks >= 1, ">= 1"), ("--steps", a.steps >= 1, ">= 1"),
              ("--warmup", a.warmup >= 0, ">= 0"), ("--batch", a.batch >= 1, ">= 1"),
              ("--seq", 1 <= a.seq <= max_seq, "in 1..%d for %s" % (max_seq, a.preset)),
              ("--bucket-mb", a.bucket_mb > 0, "> 0"), ("--timeout", a.timeout > 0, "> 0"))
    for flag, ok, need in checks:
        if not ok:
            ap.error("%s must be %s" % (flag, need))  # exits 2
    return a


def kill_all(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()  # only the ranks this run started, by their pids
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def run(a):
    tmpdir = tempfile.mkdtemp(prefix="ddp-peer-")
    cfg = dict(ranks=a.ranks, steps=a.steps, warmup=a.warmup, batch=a.batch, seq=a.seq,
               bucket_mb=a.bucket_mb, bucket_view=a.bucket_view, preset=a.preset,
               timeout=a.timeout, store=os.path.join(tmpdir, "store"),
               result=os.path.join(tmpdir, "result.json"))
    log("%s: %d ranks x batch %d x seq %d, %d warm-up + %d timed steps, bucket %g MB" % (
        a.preset, a.ranks, a.batch, a.seq, a.warmup, a.steps, a.bucket_mb))
    procs = []
    try:
        for r in range(a.ranks):
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__),
                 "--_worker", json.dumps(dict(cfg, rank=r))],
                stdin=subprocess.DEVNULL, stdout=sys.stderr))  # stdout stays for the result
        deadline = time.monotonic() + a.timeout
        while any(p.poll() is None for p in procs):
            failed = [(r, p.returncode) for r, p in enumerate(procs)
                      if p.returncode not in (None, 0)]
            if failed:
                log("rank %d exited with status %d: stopping the others" % failed[0])
                return 1
            if time.monotonic() > deadline:
                log("timed out after %g s: killing the ranks" % a.timeout)
                return 1
            time.sleep(0.1)
        failed = [(r, p.returncode) for r, p in enumerate(procs) if p.returncode != 0]
        if failed:
            log("rank %d exited with status %d" % failed[0])
            return 1
        if not os.path.exists(cfg["result"]):
            log("rank 0 wrote no result")
            return 1
        with open(cfg["result"]) as f:
            sys.stdout.write(f.read())
        sys.stdout.flush()
        return 0
    finally:
        kill_all(procs)
        for name in ("store", "result.json", "result.json.tmp"):
            try:
                os.unlink(os.path.join(tmpdir, name))
            except FileNotFoundError:
                pass
        try:
            os.rmdir(tmpdir)
        except OSError as e:
            log("could not remove %s: %s" % (tmpdir, e))


def main():
    a = parse_args(sys.argv[1:])
    if a._worker is not None:
        cfg = json.loads(a._worker)
        code = 1
        try:
            alive = worker(cfg["rank"], cfg)  # noqa: F841 (kept: see the end of worker())
            code = 0
        except Exception:
            import traceback
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # skips the teardown that can hang
    # SIGTERM (timeout(1), Slurm) unwinds through run()'s finally, which kills the ranks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
