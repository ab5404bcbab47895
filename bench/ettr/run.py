#!/usr/bin/python3
"""bench/ettr: simulated goodput (ETTR) of a long training job for endure, plain Slurm and
the cloud service, at 1k/16k/100k accelerators and a 7B/70B model.

Prints the figures it used, a table, and as its very last line one JSON object.
Every input is a flag; --help gives each one's source.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim  # noqa: E402

DAY = 86400.0
GIB = 1 << 30


def last_json(path, bench):
    """The last JSON object line of a bench's output (None if there is none)."""
    found = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if j.get("bench", bench) == bench:
                    found = j
    if found is None:
        sys.exit(f"ettr: no {bench} JSON line in {path}")
    return found


def flags():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    a = p.add_argument
    a("--sizes", default="1024,16384,100000", help="accelerators (the issue: 1k, 16k, 100k)")
    a("--models", default="7,70", help="model sizes, billions of parameters")
    a("--accel-per-node", type=int, default=8, help="8 GPUs a node (H100 HGX, as in Llama 3)")
    a("--bytes-per-param", type=float, default=16.0,
      help="checkpoint bytes a parameter: bf16 weights 2 + fp32 master 4 + AdamW m, v 8 + "
           "grads/rounding 2 (the usual 16 B/param of mixed-precision AdamW, ZeRO paper)")
    a("--days", type=float, default=30.0, help="job length (wall days) for the ETTR figures")
    a("--seeds", type=int, default=5, help="seeds a figure (mean, min-max reported)")
    a("--search-failures", type=int, default=3000,
      help="failures simulated a grid point in the interval search (long horizon, less noise)")
    a("--grid-points", type=int, default=40, help="log-spaced checkpoint intervals searched")
    a("--max-interval-s", type=float, default=6 * 3600.0, help="longest interval searched")
    a("--min-interval-s", type=float, default=10.0,
      help="shortest interval: one checkpoint a training step at most; assumption: a step "
           "of a 7B-70B model at these scales takes ~1-10 s")
    a("--failure-rate", type=float, default=sim.llama3_rate_per_accel_s() * 3600,
      help="unexpected interruptions an accelerator-hour: Llama 3 (arXiv 2407.21783, "
           "sec. 3.3.4, table 5): 419 in 54 days on 16,384 GPUs; causes and shares from table 5")
    # endure, measured (README Benchmarks table); the JSON flags replace them.
    a("--autoresume-json", help="bench/autoresume output: ours_median_s, ours_warm_median_s, "
                                "peer_requeue_s replace the three defaults below")
    a("--recovery-json", help="bench/recovery output: kinds.crash.back_median_s (cold replace "
                              "back in service) is printed with the figures")
    a("--ckpt-json", help="bench/ckpt output: largest size's memcpy/stall, persist, restore "
                          "replace the bandwidth defaults below")
    a("--endure-cold-s", type=float, default=1.4,
      help="endure fault -> step running again, cold replace (bench/autoresume, local, median)")
    a("--endure-warm-s", type=float, default=0.8,
      help="the same with a warm spare (bench/autoresume, local, median)")
    a("--endure-back-cold-s", type=float, default=0.64,
      help="replaced node back in service, cold (bench/recovery, local; printed only: the "
           "job does not wait for it, the fault->rerun figure already covers the replace)")
    a("--node-boot-s", type=float, default=0.0,
      help="added to a cold replace or a reboot that the job waits for (endure cold, cloud "
           "not: its figures include it). 0: endure's benches run nodes as local processes; "
           "a real machine's boot is minutes, try 300")
    a("--stall-gbps", type=float, default=(2 * GIB) / 0.21 / 1e9,
      help="checkpoint stall bandwidth a node, GB/s (bench/ckpt: stall 0.21 s for 2 GiB = "
           "memcpy)")
    a("--persist-gbps", type=float, default=1.9,
      help="persist (write + fsync) a node, GB/s (bench/ckpt: 1.74-2.24 GB/s; plain dd 1.56-1.79)")
    a("--restore-gbps", type=float, default=1.5, help="restore a node, GB/s (bench/ckpt: 1.22-1.89)")
    a("--storage-gbps", type=float, default=2000.0,
      help="shared storage's aggregate bandwidth, GB/s (Llama 3 sec. 3.3.1: Tectonic 2 TB/s "
           "sustained, 7 TB/s peak)")
    a("--peer-gbps", type=float, default=25.0,
      help="memory-tier replication to a peer's memory and restore from it, GB/s a node "
           "(assumption: one 200 Gb/s NIC of 8 used for it)")
    a("--slurm-requeue-s", type=float, default=142.8,
      help="plain Slurm --requeue, fault -> step running again (bench/autoresume peer, node "
           "repaired by endure)")
    a("--human-min", type=float, default=45.0,
      help="plain Slurm: minutes for a person to reboot or replace the node (assumption: an "
           "on-call response of 30-60 min; Slurm repairs nothing itself)")
    a("--cloud-replace-s", type=float, default=600.0,
      help="the cloud service (SageMaker HyperPod auto-resume): replace -> job running. "
           "ASSUMPTION: the service documents automatic replace and resume but we have no "
           "published figure at hand; 10 min = launching and health-checking an instance")
    a("--cloud-reboot-s", type=float, default=300.0, help="the cloud service: reboot (ASSUMPTION)")
    a("--job-restart-s", type=float, default=600.0,
      help="a job-only failure (software bug, dependency), for every system alike: none re-runs "
           "it on its own (endure's auto-resume declines a step that failed on healthy nodes), "
           "so a person or the user's retry loop resubmits it. ASSUMPTION: 10 min")
    a("--png", default="ettr.png", help="plot of ETTR against cluster size")
    a("--smoke", action="store_true", help="a short job: 2 days, 2 seeds, 12 grid points")
    args = p.parse_args()
    if args.smoke:
        args.days, args.seeds, args.grid_points, args.search_failures = 2.0, 2, 12, 300
    return args


def read_benches(args, used):
    if args.autoresume_json:
        j = last_json(args.autoresume_json, "autoresume")
        for key, attr in (("ours_median_s", "endure_cold_s"), ("ours_warm_median_s", "endure_warm_s"),
                          ("peer_requeue_s", "slurm_requeue_s")):
            if j.get(key) is not None:
                setattr(args, attr, float(j[key]))
                used[attr] = f"{args.autoresume_json}:{key}"
    if args.recovery_json:
        back = last_json(args.recovery_json, "recovery").get("crash_back_median_s")
        if back is not None:
            args.endure_back_cold_s = float(back)
            used["endure_back_cold_s"] = f"{args.recovery_json}:crash_back_median_s"
    if args.ckpt_json:
        sizes = last_json(args.ckpt_json, "ckpt").get("sizes") or []
        if sizes:
            big = max(sizes, key=lambda s: s["mib"])
            b = big["mib"] * (1 << 20)
            for key, attr in (("stall_s", "stall_gbps"), ("persist_s", "persist_gbps"),
                              ("restore_s", "restore_gbps")):
                setattr(args, attr, b / big[key] / 1e9)
                used[attr] = f"{args.ckpt_json}:sizes[mib={big['mib']}].{key}"


def scenarios(args, accel, params_b):
    """The five systems for one job. Checkpoints are sharded: each node writes its share."""
    nodes = accel / args.accel_per_node
    shard = params_b * 1e9 * args.bytes_per_param / nodes  # bytes a node
    storage = min(args.persist_gbps, args.storage_gbps / nodes) * 1e9
    restore = shard / (min(args.restore_gbps, args.storage_gbps / nodes) * 1e9)
    stall = shard / (args.stall_gbps * 1e9)
    persist = shard / storage
    peer = shard / (args.peer_gbps * 1e9)
    boot, mi = args.node_boot_s, args.min_interval_s
    # A job-only failure (a software bug) is re-run by none of them: endure declines it (not a
    # node fault), and so do Slurm's requeue and the cloud service's auto-resume.
    job = args.job_restart_s
    cold = {sim.REPLACE: args.endure_cold_s + boot, sim.REBOOT: args.endure_cold_s + boot,
            sim.RESTART: job}
    # With a warm spare the job takes the spare for a node being rebooted or replaced.
    warm = {sim.REPLACE: args.endure_warm_s, sim.REBOOT: args.endure_warm_s, sim.RESTART: job}
    person = args.human_min * 60.0
    slurm = {sim.REPLACE: args.slurm_requeue_s + person, sim.REBOOT: args.slurm_requeue_s + person,
             sim.RESTART: job}
    cloud = {sim.REPLACE: args.cloud_replace_s, sim.REBOOT: args.cloud_reboot_s,
             sim.RESTART: job}
    S = sim.Scenario
    return [
        S("endure cold", cold, stall, persist, restore, mi, "async persist, no spare"),
        S("endure warm", warm, stall, persist, restore, mi, "async persist, warm spare"),
        S("endure memtier", warm, stall, peer, peer, mi, "warm spare, checkpoint in a peer's memory"),
        S("slurm requeue", slurm, persist, 0.0, restore, mi, "synchronous save, a person repairs"),
        S("cloud service", cloud, persist, 0.0, restore, mi, "synchronous save, assumed times"),
    ], {"shard_gb": shard / 1e9, "stall_s": stall, "persist_s": persist, "restore_s": restore,
        "peer_s": peer}


def log_grid(lo, hi, n):
    return [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]


def main():
    args = flags()
    used = {}
    read_benches(args, used)
    sizes = [int(x) for x in args.sizes.split(",")]
    models = [float(x) for x in args.models.split(",")]
    shares = sim.action_shares()
    print("figures used (flag = value  [source: default, see --help, or the JSON read]):")
    for k in ("failure_rate", "endure_cold_s", "endure_warm_s", "endure_back_cold_s", "node_boot_s",
              "stall_gbps", "persist_gbps", "restore_gbps", "storage_gbps", "peer_gbps",
              "slurm_requeue_s", "human_min", "cloud_replace_s", "cloud_reboot_s",
              "job_restart_s", "bytes_per_param", "min_interval_s", "days", "seeds"):
        print(f"  {k:<20} {getattr(args, k):<12.6g} [{used.get(k, 'default')}]")
    print("  failure actions      " + ", ".join(f"{a} {v:.1%}" for a, v in sorted(shares.items()))
          + "  (Llama 3 table 5 causes -> endure fault kinds -> recovery_policy.cpp)")
    rows = []
    for params in models:
        for accel in sizes:
            rate = args.failure_rate * accel / 3600.0  # job-wide, per second
            mtbf = 1 / rate
            scs, sizes_info = scenarios(args, accel, params)
            grid = log_grid(args.min_interval_s, args.max_interval_s, args.grid_points)
            search_h = max(args.days * DAY, args.search_failures * mtbf)
            for sc in scs:
                t_best, _, _ = sim.best_interval(sc, grid, rate, search_h, seeds=[1000])
                e, runs = sim.mean_ettr(sc, t_best, rate, args.days * DAY, range(args.seeds))
                yd = sim.young_daly(sc.stall_s, mtbf)
                e_yd = sim.mean_ettr(sc, max(yd, sc.min_interval_s, sc.durable_after_s), rate,
                                     args.days * DAY, range(args.seeds))[0]
                rows.append({
                    "model_b": params, "accelerators": accel, "system": sc.name, "note": sc.note,
                    "mtbf_h": round(mtbf / 3600, 3), "ettr": round(e, 5),
                    "ettr_min": round(min(r["ettr"] for r in runs), 5),
                    "ettr_max": round(max(r["ettr"] for r in runs), 5),
                    "failures_mean": round(sum(r["n_failures"] for r in runs) / len(runs), 1),
                    "interval_best_s": round(t_best, 2), "interval_young_daly_s": round(yd, 2),
                    "ettr_at_young_daly": round(e_yd, 5),
                    "stall_s": round(sc.stall_s, 4), "durable_after_s": round(sc.durable_after_s, 4),
                    "restore_s": round(sc.restore_s, 4),
                    "recovery_s": {k: round(v, 3) for k, v in sc.recovery_s.items()},
                    "shard_gb": round(sizes_info["shard_gb"], 3)})
    print()
    print(f"ETTR over a {args.days:g}-day job, mean of {args.seeds} seeds (min-max), at the best "
          f"grid interval; T*: that interval, YD: Young/Daly sqrt(2 stall MTBF)")
    print(f"{'model':>5} {'accel':>7} {'MTBF h':>7} {'system':<15} {'ETTR':>7} {'min-max':>15} "
          f"{'fails':>6} {'stall s':>8} {'T* s':>8} {'YD s':>8} {'ETTR@YD':>8}")
    for r in rows:
        print(f"{r['model_b']:>4g}B {r['accelerators']:>7} {r['mtbf_h']:>7.2f} {r['system']:<15} "
              f"{r['ettr']:>7.4f} {r['ettr_min']:>7.4f}-{r['ettr_max']:<7.4f} "
              f"{r['failures_mean']:>6.0f} {r['stall_s']:>8.3f} {r['interval_best_s']:>8.1f} "
              f"{r['interval_young_daly_s']:>8.1f} {r['ettr_at_young_daly']:>8.4f}")
    print("T* is clamped to --min-interval-s (a step) and to the persist time (endure: one "
          "persist in flight at a time); where YD is below that, the clamp decides.")
    png = plot(rows, args.png)
    print(json.dumps({"bench": "ettr", "smoke": args.smoke, "inputs": {k: v for k, v in vars(args).items()},
                      "sources": used, "action_shares": shares, "png": png, "rows": rows},
                     separators=(",", ":")))


def plot(rows, path):
    """ETTR against cluster size, one line a system, one panel a model. None if no matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: no matplotlib, no plot (run with /usr/bin/python3)", file=sys.stderr)
        return None
    models = sorted({r["model_b"] for r in rows})
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.5), squeeze=False)
    for ax, m in zip(axes[0], models):
        for name in dict.fromkeys(r["system"] for r in rows):
            pts = [(r["accelerators"], r["ettr"]) for r in rows if r["model_b"] == m and r["system"] == name]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("accelerators")
        ax.set_ylabel("ETTR")
        ax.set_title(f"{m:g}B model")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return os.path.abspath(path)


if __name__ == "__main__":
    main()
