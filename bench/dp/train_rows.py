#!/usr/bin/python3
"""bench/dp's training rows and its report: endure-train across ranks beside PyTorch DDP.

What it measures, in one run on this machine (ranks as processes on 127.0.0.1):
  - tokens/s (the median of the per-step figures after SKIP warm-up steps) and peak RSS per
    rank, at 1, 2 and 4 ranks x 1 thread, for endure-train --zero 0, 1, 2, 3 and for
    PyTorch DDP (bench/dp/ddp_peer.py), same model, batch 8 per rank, one thread per rank;
  - endure-train at 1 rank x 2 threads, --batch 16 (the global batch of 2 ranks x 8);
  - per endure row: the bytes of parameters + gradients + AdamW state rank 0 holds after
    the last step (its "state_bytes") against the ZeRO paper's arithmetic for fp32 AdamW,
    and the fraction of communication hidden behind backward, 1 - comm_exposed_s / comm_s.
Then it prints the comm rows (endure-comm-bench's JSON lines, measured by run.sh before),
the training tables, the targets, and as its very last line one JSON object with every
figure and ratio.

    train_rows.py --bin DIR --data DIR --work DIR --comm FILE [--smoke]
                  [--steps 12] [--steps4 8] [--skip 2]

--steps: steps a row at 1 and 2 ranks, --steps4 at 4 ranks, the first --skip of them not
timed (the same counts for DDP: --warmup skip --steps steps-skip). --smoke: the tiny model,
1 and 2 ranks, a check that everything runs, not a measurement.

Every process has a deadline; a rank that fails or overruns has the row's other processes
killed by pid (ddp_peer.py gets SIGTERM, which kills its own ranks). A failed row is shown
as failed and the exit status is 1; 0 when every row was measured (targets met or not).
"""
import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from benchlib import fmt, print_header, print_result, read_jsonl, verdict  # noqa: E402

DDP_PEER = os.path.join(HERE, "ddp_peer.py")
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch; ddp_peer.py re-execs into it anyway

# The ZeRO paper's bytes per parameter for fp32 AdamW (4 B weights, 4 B gradients, 8 B
# moments) held by one of N ranks, by stage. Stage 3's units gathered for compute are
# released after the step, so after the last step only the rank's shard remains.
PAPER_BYTES = {
    0: lambda n: 16.0,
    1: lambda n: 8.0 + 8.0 / n,
    2: lambda n: 4.0 + 12.0 / n,
    3: lambda n: 16.0 / n,
}
MIB = 1 << 20

live = []  # the processes of the row running now: killed on any exit, by pid


def log(msg):
    sys.stderr.write("[bench dp] %s\n" % msg)
    sys.stderr.flush()


def kill_live():
    for p in live:
        if p.returncode is None:
            try:
                p.kill()
            except ProcessLookupError:
                pass
    for p in live:
        if p.returncode is None:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    live.clear()


def tail(path, n=6):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(l.rstrip() for l in f.readlines()[-n:])
    except OSError:
        return ""


# ---- endure-train: N ranks as processes, meeting in a fresh rendezvous folder ----

def run_endure(a, ranks, zero, threads, batch, steps):
    row = dict(trainer="endure", ranks=ranks, threads=threads, zero=zero,
               batch_per_rank=batch, steps=steps, skip=a.skip)
    work = tempfile.mkdtemp(dir=a.work, prefix="endure-w%d-z%d-t%d-" % (ranks, zero, threads))
    # A fresh folder and key a run: the rendezvous key is made from job, step and try.
    key = str(random.randrange(1, 1 << 31))
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("SLURM_") and not k.startswith("ENDURE_")}
    cmd = [os.path.join(a.bin, "endure-train"), "--data", a.data, "--model", a.model,
           "--vocab-size", str(a.vocab), "--batch", str(batch), "--eval-every", "0",
           "--warmup", "1", "--steps", str(steps), "--threads", str(threads),
           "--zero", str(zero), "--rendezvous", os.path.join(work, "rendezvous")]
    timeout = a.timeout * (2 if ranks > 2 else 1)
    log("endure %d rank(s) x %d thread(s), zero %d, batch %d, %d steps" % (
        ranks, threads, zero, batch, steps))
    t0 = time.monotonic()
    for r in range(ranks):
        env = dict(base, SLURM_JOB_ID="1", SLURM_STEP_ID="0", SLURM_PROCID=str(r),
                   SLURM_NTASKS=str(ranks), ENDURE_COMM_ADDRESS="127.0.0.1",
                   ENDURE_AUTO_RESUME_COUNT=key, OMP_NUM_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS="1")
        with open(os.path.join(work, "out.%d" % r), "w") as out, \
                open(os.path.join(work, "err.%d" % r), "w") as err:
            live.append(subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err))
    # Reap with wait4 for each rank's own peak RSS (ranks other than 0 print nothing).
    rss = [None] * ranks
    codes = [None] * ranks
    failed = None
    while any(c is None for c in codes):
        for r, p in enumerate(live):
            if codes[r] is not None:
                continue
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                codes[r] = p.returncode = os.waitstatus_to_exitcode(status)
                rss[r] = usage.ru_maxrss * 1024  # Linux: KiB
                if codes[r] != 0 and failed is None:
                    failed = "rank %d exited with status %d: %s" % (
                        r, codes[r], tail(os.path.join(work, "err.%d" % r)))
        if failed:
            break
        if time.monotonic() - t0 > timeout:
            failed = "timed out after %d s" % timeout
            break
        time.sleep(0.05)
    kill_live()
    row["wall_s"] = round(time.monotonic() - t0, 3)
    if failed:
        row["error"] = failed
        log("  failed: " + failed)
        return row

    lines = read_jsonl(os.path.join(work, "out.0"))
    start = next((l for l in lines if l.get("start")), None)
    done = next((l for l in lines if l.get("done")), None)
    step_lines = [l for l in lines if "loss" in l and "step" in l]
    timed = step_lines[a.skip:]
    if not start or not done or not timed:
        row["error"] = "rank 0 printed no start, done or timed step line"
        return row
    n = ranks
    params = start["params"]
    paper = PAPER_BYTES[zero](n)
    comm_t = sum(l["comm_ms"] for l in timed) / 1e3
    exposed_t = sum(l["comm_exposed_ms"] for l in timed) / 1e3
    row.update(
        params=params, global_batch=start["global_batch"], world=start["world"],
        tokens_per_step=start["tokens_per_step"], timed_steps=len(timed),
        tokens_per_s=round(statistics.median(l["tokens_per_s"] for l in timed), 2),
        step_ms_median=round(statistics.median(l["step_ms"] for l in timed), 3),
        tokens_per_s_steps=[round(l["tokens_per_s"], 1) for l in step_lines],
        tokens_per_s_all_steps=round(done["tokens_per_s"], 2),  # the done line's, warm-up too
        loss_last=round(timed[-1]["loss"], 6),
        state_bytes=done["state_bytes"],
        state_bytes_per_param=round(done["state_bytes"] / params, 4),
        paper_bytes_per_param=round(paper, 4),
        state_ratio=round(done["state_bytes"] / (params * paper), 4),
        peak_rss_bytes_rank0_own=done["peak_rss_bytes"],  # endure-train's own figure
        peak_rss_bytes=rss,  # each rank's, from wait4
        peak_rss_bytes_max=max(rss),
        comm_s=done["comm_s"], comm_exposed_s=done["comm_exposed_s"],
        comm_s_timed=round(comm_t, 6), comm_exposed_s_timed=round(exposed_t, 6),
    )
    row["state_within_10pct"] = abs(row["state_ratio"] - 1) <= 0.10
    if ranks > 1:
        row["hidden_fraction"] = (round(1 - done["comm_exposed_s"] / done["comm_s"], 4)
                                  if done["comm_s"] > 0 else None)
        row["hidden_fraction_timed"] = round(1 - exposed_t / comm_t, 4) if comm_t > 0 else None
        # a step whose exposed time exceeds its collectives' time (not possible if both are
        # measured over the same collectives): counted, reported
        row["steps_exposed_over_comm"] = sum(
            1 for l in step_lines if l["comm_exposed_ms"] > l["comm_ms"])
    log("  %.1f tokens/s, state %.2f B/param (paper %.2f)" % (
        row["tokens_per_s"], row["state_bytes_per_param"], paper))
    return row


# ---- PyTorch DDP: bench/dp/ddp_peer.py, which starts and bounds its own ranks ----

def run_ddp(a, ranks, steps):
    row = dict(trainer="pytorch-ddp", ranks=ranks, threads=1, zero=None, batch_per_rank=8,
               steps=steps, skip=a.skip)
    timeout = a.timeout * (2 if ranks > 2 else 1)
    cmd = [TORCH_PYTHON if os.path.exists(TORCH_PYTHON) else sys.executable, DDP_PEER,
           "--preset", a.ddp_preset, "--ranks", str(ranks), "--batch", "8",
           "--warmup", str(a.skip), "--steps", str(steps - a.skip), "--timeout", str(timeout)]
    log("pytorch ddp %d rank(s), %s, %d warm-up + %d timed steps" % (
        ranks, a.ddp_preset, a.skip, steps - a.skip))
    err_path = os.path.join(a.work, "ddp-%d.err" % ranks)
    t0 = time.monotonic()
    with open(err_path, "w") as err:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=err, text=True)
        live.append(p)
        try:
            out, _ = p.communicate(timeout=timeout + 30)  # its own --timeout goes first
        except subprocess.TimeoutExpired:
            p.terminate()  # SIGTERM: ddp_peer.py kills its ranks by pid and exits
            try:
                p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            out = None
    kill_live()
    row["wall_s"] = round(time.monotonic() - t0, 3)
    if out is None or p.returncode != 0 or not out.strip():
        row["error"] = "ddp_peer.py %s: %s" % (
            "timed out" if out is None else "exited with status %s" % p.returncode,
            tail(err_path))
        log("  failed: " + row["error"])
        return row
    try:
        r = json.loads(out.strip().splitlines()[-1])
    except ValueError:
        row["error"] = "ddp_peer.py printed no JSON last line: %s" % tail(err_path)
        return row
    tokens_per_step = r["ranks"] * r["batch"] * r["seq"]
    row.update(
        params=r["params"], global_batch=r["ranks"] * r["batch"], seq=r["seq"],
        torch=r["torch"], threads=r["threads_per_rank"], timed_steps=r["steps"],
        tokens_per_step=tokens_per_step,
        # the median step (pooled over the ranks), as endure's rows take theirs
        tokens_per_s=round(tokens_per_step / (r["step_ms_median"] / 1e3), 2),
        step_ms_median=r["step_ms_median"],
        tokens_per_s_wall=r["tokens_per_s"],  # ddp_peer's own: the timed steps' wall time
        loss_last=r["loss"],
        peak_rss_bytes=r["peak_rss_bytes"], peak_rss_bytes_max=max(r["peak_rss_bytes"]),
        peak_rss_increase_bytes=r["peak_rss_increase_bytes"],
    )
    log("  %.1f tokens/s" % row["tokens_per_s"])
    return row


# ---- the report ----

def comm_report(path, smoke):
    sweeps = read_jsonl(path)
    # run.sh sweeps every size several times; a size's row is the median of its sweeps, so
    # one slow moment of ranks sharing 2 cores does not decide it.
    by_size = {}
    for r in sweeps:
        by_size.setdefault((r["ranks"], r["bytes"]), []).append(r)
    rows = []
    for (ranks, size), runs in sorted(by_size.items()):
        row = {"ranks": ranks, "bytes": size, "sweeps": len(runs)}
        for k in ("endure_busbw_gbs", "gloo_busbw_gbs", "paired_ratio"):
            vals = [x[k] for x in runs if k in x]
            if vals:
                row[k] = statistics.median(vals)
        row["paired_ratios"] = [x.get("paired_ratio") for x in runs]
        rows.append(row)
    print()
    print("all-reduce bus bandwidth, GB/s (bytes * 2 (N-1) / N / median time), endure::comm beside")
    print("plain Gloo (its ring all-reduce on a context of its own), same processes, same run;")
    print("ratio: the median over back-to-back pairs of Gloo's time over endure's; each row the")
    print("median of %d sweeps" % max((r["sweeps"] for r in rows), default=0))
    print()
    hdr = "%5s %10s %12s %12s %8s" % ("ranks", "bytes", "endure", "plain Gloo", "ratio")
    print_header(hdr)
    met = True
    for r in rows:
        r["ratio"] = round(r.get("paired_ratio", r["endure_busbw_gbs"] / r["gloo_busbw_gbs"]), 3)
        if r["bytes"] >= 1 << 20 and r["ratio"] < 0.9:
            met = False
        print("%5d %10d %12.3f %12.3f %7.2fx" % (
            r["ranks"], r["bytes"], r["endure_busbw_gbs"], r["gloo_busbw_gbs"], r["ratio"]))
    big = [r for r in rows if r["bytes"] >= 1 << 20]
    print()
    print("target: endure >= 90 %% of plain Gloo at every size >= 1 MiB: %s" % (
        verdict(met) if big else "no size >= 1 MiB measured"))
    return {"rows": rows, "min_ratio_from_1MiB": min((r["ratio"] for r in big), default=None),
            "target_ratio": 0.9, "target_met": met if big else None}


def find(rows, trainer, ranks, zero=None, threads=1):
    for r in rows:
        if (r["trainer"] == trainer and r["ranks"] == ranks and r["threads"] == threads
                and (trainer != "endure" or r["zero"] == zero) and "error" not in r):
            return r
    return None


def ratio(a, b):
    return round(a["tokens_per_s"] / b["tokens_per_s"], 3) if a and b else None


def train_report(a, rows):
    print()
    print("training: %s, batch 8 per rank, seq %s, median tokens/s (all ranks) of steps %d..%d"
          " (%d..%d at 4 ranks)" % (a.model, "16" if a.smoke else "256", a.skip + 1, a.steps,
                                    a.skip + 1, a.steps4))
    print("peak RSS: the largest rank's (PyTorch's includes ~240 MiB of torch runtime)")
    print()
    hdr = "%5s %7s %-12s %10s %9s %7s %12s" % (
        "ranks", "threads", "trainer", "tokens/s", "step ms", "x DDP", "peak RSS MiB")
    print_header(hdr)
    for r in rows:
        name = ("endure z%d" % r["zero"]) if r["trainer"] == "endure" else "PyTorch DDP"
        if "error" in r:
            print("%5d %7d %-12s   failed: %s" % (r["ranks"], r["threads"], name, r["error"][:120]))
            continue
        ddp = find(rows, "pytorch-ddp", r["ranks"]) if r["threads"] == 1 else None
        r["x_ddp"] = ratio(r, ddp) if r["trainer"] == "endure" else None
        print("%5d %7d %-12s %10.1f %9.1f %7s %12.1f" % (
            r["ranks"], r["threads"], name, r["tokens_per_s"], r["step_ms_median"],
            fmt(r["x_ddp"], "%.2fx"), r["peak_rss_bytes_max"] / MIB))

    ours = [r for r in rows if r["trainer"] == "endure" and "error" not in r]
    print()
    print("ZeRO: parameters + gradients + AdamW state held by rank 0 after the last step, against")
    print("the ZeRO paper's fp32 AdamW arithmetic (16 | 8+8/N | 4+12/N | 16/N bytes a parameter)")
    print()
    hdr = "%5s %7s %4s %10s %10s %8s %8s %7s %6s" % (
        "ranks", "threads", "zero", "params", "state MiB", "B/param", "paper", "ratio", "<=10%")
    print_header(hdr)
    for r in ours:
        print("%5d %7d %4d %10d %10.1f %8.2f %8.2f %7.3f %6s" % (
            r["ranks"], r["threads"], r["zero"], r["params"], r["state_bytes"] / MIB,
            r["state_bytes_per_param"], r["paper_bytes_per_param"], r["state_ratio"],
            "yes" if r["state_within_10pct"] else "no"))

    multi = [r for r in ours if r["ranks"] > 1]
    print()
    print("communication hidden behind backward: 1 - comm_exposed_s / comm_s (every step; and")
    print("over the timed steps only)")
    print()
    hdr = "%5s %4s %9s %11s %8s %13s %18s" % (
        "ranks", "zero", "comm s", "exposed s", "hidden", "hidden timed", "steps exposed>comm")
    print_header(hdr)
    for r in multi:
        print("%5d %4d %9.3f %11.3f %8s %13s %18d" % (
            r["ranks"], r["zero"], r["comm_s"], r["comm_exposed_s"],
            fmt(r["hidden_fraction"], "%.3f"), fmt(r["hidden_fraction_timed"], "%.3f"),
            r["steps_exposed_over_comm"]))

    # the targets
    t = {}
    for n in (2, 4):
        x = ratio(find(rows, "endure", n, 0), find(rows, "pytorch-ddp", n))
        t["endure_z0_vs_ddp_%dranks" % n] = {"ratio": x, "target": 1.5,
                                             "met": None if x is None else x >= 1.5}
    x = ratio(find(rows, "endure", 2, 0), find(rows, "endure", 1, 0, threads=2))
    t["endure_2ranks_vs_1rank_2threads"] = {"ratio": x, "target": 0.9,
                                           "met": None if x is None else x >= 0.9}
    t["zero_state_within_10pct"] = {
        "met": all(r["state_within_10pct"] for r in ours) if ours else None,
        "worst_ratio": max((r["state_ratio"] for r in ours),
                           key=lambda v: abs(v - 1), default=None)}
    t["hidden_fraction"] = {"%dranks_zero%d" % (r["ranks"], r["zero"]): r["hidden_fraction"]
                            for r in multi if r["ranks"] in (2, 4)}
    print()
    for n in (2, 4):
        v = t["endure_z0_vs_ddp_%dranks" % n]
        print("target: endure (zero 0) >= 1.5x PyTorch DDP tokens/s at %d ranks: %s (%s)" % (
            n, verdict(v["met"]), fmt(v["ratio"], "%.2fx")))
    v = t["endure_2ranks_vs_1rank_2threads"]
    print("target: 2 ranks x 1 thread >= 90 %% of 1 rank x 2 threads: %s (%s)" % (
        verdict(v["met"]), fmt(v["ratio"], "%.2f")))
    v = t["zero_state_within_10pct"]
    print("target: ZeRO state within 10 %% of the paper's arithmetic, every row: %s (worst %s)" % (
        verdict(v["met"]), fmt(v["worst_ratio"], "%.3f")))
    print("reported: communication hidden behind backward, 2 and 4 ranks: %s" % (
        ", ".join("%s %s" % (k, fmt(h, "%.3f")) for k, h in t["hidden_fraction"].items())
        or "not measured"))
    return t


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", required=True, help="an endure-data prepare folder")
    ap.add_argument("--work", required=True, help="a folder for the rows' files (the caller removes it)")
    ap.add_argument("--comm", required=True, help="endure-comm-bench's JSON lines")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--steps", type=int, default=12, help="steps a row at 1 and 2 ranks")
    ap.add_argument("--steps4", type=int, default=8, help="steps a row at 4 ranks")
    ap.add_argument("--skip", type=int, default=2, help="first steps not timed")
    ap.add_argument("--timeout", type=int, default=240,
                    help="seconds a row at 1-2 ranks (twice that at 4)")
    ap.add_argument("--ranks", default="", help="rank counts, e.g. 2,4 (default 1,2,4; smoke 1,2)")
    a = ap.parse_args(argv)
    if a.timeout < 1:
        ap.error("--timeout must be >= 1")
    if a.skip < 0 or min(a.steps, a.steps4) <= max(a.skip, 1):
        ap.error("need steps, steps4 > skip >= 0 and steps, steps4 >= 2")  # exits 2
    if a.smoke:
        a.model, a.vocab, a.ddp_preset, a.rank_counts = "tiny", 512, "tiny", (1, 2)
    else:
        a.model, a.vocab, a.ddp_preset, a.rank_counts = "stories15M", 32000, "stories15M", (1, 2, 4)
    if a.ranks:
        try:
            a.rank_counts = tuple(int(n) for n in a.ranks.split(","))
        except ValueError:
            ap.error("--ranks: a list of numbers such as 1,2,4")
        if min(a.rank_counts) < 1:
            ap.error("--ranks: counts >= 1")
    return a


def main():
    a = parse_args(sys.argv[1:])
    # SIGTERM (timeout(1), ctest, run.sh's trap) unwinds through main's finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rows = []
    try:
        for n in a.rank_counts:
            steps = a.steps4 if n > 2 else a.steps
            for zero in (0, 1, 2, 3):
                rows.append(run_endure(a, n, zero, 1, 8, steps))
            rows.append(run_ddp(a, n, steps))
            if n == 1:  # the same global batch as 2 ranks x 8, in one process
                rows.append(run_endure(a, 1, 0, 2, 16, steps))
    finally:
        kill_live()
    comm = comm_report(a.comm, a.smoke)
    targets = train_report(a, rows)
    if a.smoke:
        print()
        print("(smoke run: a check that the bench works, not a measurement)")
    over = [n for n in a.rank_counts if n > (os.cpu_count() or 1)]
    if over:
        print("(%s ranks on %d cores: the ranks share cores)" % (
            " and ".join(map(str, over)), os.cpu_count()))
    failed = [r for r in rows if "error" in r]
    print_result({
        "bench": "dp", "smoke": a.smoke, "cores": os.cpu_count(), "comm": comm,
        "train": {"model": a.model, "vocab_size": a.vocab, "batch_per_rank": 8,
                  "steps": a.steps, "steps_4ranks": a.steps4, "skip": a.skip, "rows": rows},
        "targets": targets, "failed_rows": len(failed)}, compact=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
