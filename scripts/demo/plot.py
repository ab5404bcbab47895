#!/usr/bin/env python3
"""The demo's loss curve: the faulty run's loss and step over wall time, one colour a try
(so each resumed segment shows, starting back at its checkpoint), each fault a vertical
line with its kind and node and a band until the step ran again.

  plot.py --stamped faulty.stamped.jsonl --report report.json --out loss.png
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def tries_of(lines):
    tries = []
    for line in lines:
        if line.get("start"):
            tries.append({"start": line, "steps": []})
        elif "loss" in line and tries:
            tries[-1]["steps"].append(line)
    return tries


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stamped", required=True)
    p.add_argument("--report", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    with open(a.report) as f:
        report = json.load(f)
    tries = tries_of(read_lines(a.stamped))
    t0 = report["t0"]

    fig, (ax_loss, ax_step) = plt.subplots(2, 1, figsize=(11, 7.5), sharex=True,
                                           gridspec_kw={"height_ratios": [3, 2]})
    colours = plt.get_cmap("tab10").colors
    for i, tr in enumerate(tries):
        if not tr["steps"]:
            continue
        t = [s["t"] - t0 for s in tr["steps"]]
        resumed = tr["start"].get("resumed_from")
        label = f"try {i + 1}" + (f" (from step {resumed})" if resumed else " (from scratch)")
        c = colours[i % len(colours)]
        ax_loss.plot(t, [s["loss"] for s in tr["steps"]], color=c, lw=1.1, label=label)
        ax_step.plot(t, [s["step"] for s in tr["steps"]], color=c, lw=1.6)
    for i, f in enumerate(report["faults"]):
        x = f["t"] - t0
        label = f"{f['kind']} on {f['node']}\nat step {f['step']}"
        for ax in (ax_loss, ax_step):
            ax.axvline(x, color="crimson", ls="--", lw=1.2)
            if "running_s" in f:
                ax.axvspan(x, x + f["running_s"], color="crimson", alpha=0.12)
        ax_loss.annotate(label, xy=(x, 1), xycoords=("data", "axes fraction"),
                         xytext=(4, -4 - 26 * (i % 2)), textcoords="offset points", va="top",
                         fontsize=8.5,
                         color="crimson")
        if "steps_lost" in f:
            ax_step.annotate(f"{f.get('running_s', 0):.1f} s, {f['steps_lost']} steps lost",
                             xy=(x, f["resumed_from"]), xytext=(6, -14),
                             textcoords="offset points", fontsize=8, color="crimson")

    ax_loss.set_ylabel("training loss")
    ax_loss.set_title(
        f"endure: {report['final_step']} steps on 4 workers through {len(report['faults'])} "
        f"faults; effective training time {report['effective_ratio']:.1%}, final weights "
        f"{'==' if report['bitwise']['pass'] else '!='} fault-free run's", fontsize=10.5)
    ax_loss.legend(loc="upper right", fontsize=8.5, bbox_to_anchor=(1, 0.85))
    ax_loss.grid(alpha=0.3)
    ax_step.set_ylabel("step")
    ax_step.set_xlabel("wall time since the run started (s); red bands: fault to step running again")
    ax_step.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
