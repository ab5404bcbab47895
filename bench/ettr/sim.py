"""Discrete-event simulator of a long training job's goodput (ETTR).

ETTR (effective training time ratio) = time spent on training work that is never thrown
away / wall time. Pure functions, seeded RNG, no I/O: run.py feeds it figures and prints.

The events are failures, not seconds: between two failures the checkpoint cycle is
deterministic (compute T, stall delta, durable L later), so the work done and the work
made durable by an offset x into an up period are closed-form (work_done, durable_work).
A 30-day job on 100k accelerators is ~1,400 events, so grids of intervals are cheap.
"""
import bisect
import math
import random
from dataclasses import dataclass, field

REBOOT, REPLACE, RESTART = "Reboot", "Replace", "Restart"

# Llama 3 (Dubey et al., "The Llama 3 Herd of Models", arXiv 2407.21783, section 3.3.4 and
# table 5): 419 unexpected interruptions in 54 days on 16,384 H100s. Percentages as
# published (they sum to ~96 %; weights are normalised). Each cause is mapped to the fault
# kind endured would see and so to the action of src/controller/core/recovery_policy.cpp
# (action_for_fault): hang, slurmd-gone, fsx-* -> Reboot; every other kind -> Replace.
# Causes with no bad node (a software bug, a dependency) need no node action: the job
# restarts on the same nodes (RESTART).
LLAMA3_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
LLAMA3_GPUS = 16384
LLAMA3_CAUSES = [
    # cause, % of unexpected interruptions, endure fault kind, action
    ("faulty GPU", 30.1, "xid", REPLACE),
    ("GPU HBM3 memory", 17.2, "ecc", REPLACE),
    ("software bug", 12.9, "(job only)", RESTART),
    ("network switch/cable", 8.4, "other", REPLACE),
    ("host maintenance", 7.6, "crash", REPLACE),
    ("GPU SRAM memory", 4.5, "ecc", REPLACE),
    ("GPU system processor", 4.1, "xid", REPLACE),
    ("NIC", 1.7, "other", REPLACE),
    ("NCCL watchdog timeout", 1.7, "hang", REBOOT),
    ("silent data corruption", 1.6, "xid", REPLACE),
    ("GPU thermal interface/sensor", 1.4, "xid", REPLACE),
    ("SSD", 1.3, "local-disk", REPLACE),
    ("power supply", 1.0, "crash", REPLACE),
    ("server chassis", 0.6, "crash", REPLACE),
    ("IO expansion board", 0.6, "gpu-count", REPLACE),
    ("dependency", 0.6, "(job only)", RESTART),
    ("CPU", 0.5, "cpu", REPLACE),
    ("system memory", 0.4, "mce", REPLACE),
]


def llama3_rate_per_accel_s():
    """Unexpected interruptions per accelerator-second (Llama 3)."""
    return LLAMA3_INTERRUPTIONS / (LLAMA3_DAYS * 86400.0 * LLAMA3_GPUS)


def action_shares(causes=LLAMA3_CAUSES):
    """{action: fraction of failures}, normalised."""
    total = sum(c[1] for c in causes)
    out = {}
    for _, pct, _, action in causes:
        out[action] = out.get(action, 0.0) + pct / total
    return out


@dataclass(frozen=True)
class Scenario:
    """How one system checkpoints and recovers. Seconds throughout.

    recovery_s: per action, from the fault to the job's processes running again (detection
    included), before the checkpoint is restored. stall_s: training blocked per checkpoint.
    durable_after_s: after the stall, until that checkpoint survives a failure (an async
    persist, a replication to a peer's memory; 0 for a synchronous save). restore_s: reading
    the checkpoint back before the first step. min_interval_s: the shortest interval allowed.
    """
    name: str
    recovery_s: dict
    stall_s: float = 0.0
    durable_after_s: float = 0.0
    restore_s: float = 0.0
    min_interval_s: float = 0.0
    note: str = ""


def work_done(x, interval, stall):
    """Compute time done by offset x into an up period (stalls excluded)."""
    period = interval + stall
    k = math.floor(x / period)
    return k * interval + min(x - k * period, interval)


def durable_work(x, interval, stall, durable_after):
    """Compute time covered by the last checkpoint that is durable at offset x."""
    if x < durable_after:
        return 0.0
    return math.floor((x - durable_after) / (interval + stall)) * interval


def simulate(sc, interval, rate, horizon_s, seed, causes=LLAMA3_CAUSES):
    """One job of horizon_s wall seconds; failures Poisson at `rate` per second job-wide.

    A failure during recovery starts the recovery again (with the new cause's action): the
    job needs every node. Failure times depend only on the seed, not on the interval, so
    runs that differ only in the interval see the same failures (common random numbers).
    Returns a dict of totals and "ettr".
    """
    rng = random.Random(seed)
    weights = [c[1] for c in causes]
    cum = [sum(weights[:i + 1]) for i in range(len(weights))]
    actions = [c[3] for c in causes]

    def next_failure(t):
        return t + rng.expovariate(rate) if rate > 0 else math.inf

    def draw_action():
        return actions[min(bisect.bisect_right(cum, rng.random() * cum[-1]), len(cum) - 1)]

    productive = lost = down = 0.0
    failures = {REBOOT: 0, REPLACE: 0, RESTART: 0}
    up_start = 0.0
    f = next_failure(0.0)
    while True:
        if f >= horizon_s:  # the job ends up: everything done so far counts
            productive += work_done(horizon_s - up_start, interval, sc.stall_s)
            break
        x = f - up_start
        kept = durable_work(x, interval, sc.stall_s, sc.durable_after_s)
        productive += kept
        lost += work_done(x, interval, sc.stall_s) - kept
        down_start = end = f
        while f <= end:  # recovering; a failure meanwhile starts it again
            action = draw_action()
            failures[action] += 1
            end = f + sc.recovery_s[action] + sc.restore_s
            f = next_failure(f)
        down += min(end, horizon_s) - down_start
        if end >= horizon_s:
            break
        up_start = end
    return {"ettr": productive / horizon_s, "productive_s": productive, "lost_s": lost,
            "down_s": down, "stall_s": horizon_s - productive - lost - down,
            "failures": failures, "n_failures": sum(failures.values())}


def mean_ettr(sc, interval, rate, horizon_s, seeds, causes=LLAMA3_CAUSES):
    runs = [simulate(sc, interval, rate, horizon_s, s, causes) for s in seeds]
    return sum(r["ettr"] for r in runs) / len(runs), runs


def best_interval(sc, grid, rate, horizon_s, seeds, causes=LLAMA3_CAUSES):
    """(best interval, its mean ETTR, [(interval, ettr)]) over the grid points the
    scenario allows (>= min_interval_s, >= durable_after_s: one persist at a time)."""
    lo = max(sc.min_interval_s, sc.durable_after_s)
    pts = [t for t in grid if t >= lo] or [lo]
    curve = [(t, mean_ettr(sc, t, rate, horizon_s, seeds, causes)[0]) for t in pts]
    t, e = max(curve, key=lambda p: p[1])
    return t, e, curve


def young_daly(stall, mtbf):
    """Young's first-order optimum sqrt(2 delta M); Daly's refinement subtracts delta."""
    return math.sqrt(2.0 * stall * mtbf)


def closed_form_ettr(interval, stall, durable_after, recovery, rate):
    """Exact expected ETTR of simulate()'s model for a fixed recovery time (renewal-reward).

    Up period X ~ Exp(rate); durable work kept = interval * #{j >= 1: X >= j P + L}, with
    P = interval + stall, so E = interval e^{-rate L} / (e^{rate P} - 1). A recovery of R
    restarted by any failure during it lasts (e^{rate R} - 1) / rate on average, so a cycle
    lasts e^{rate R} / rate.
    """
    if rate == 0:
        return interval / (interval + stall)
    p = interval + stall
    return rate * interval * math.exp(-rate * durable_after) / (
        math.expm1(rate * p) * math.exp(rate * recovery))
