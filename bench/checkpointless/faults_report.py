#!/usr/bin/env python3
"""bench/checkpointless/faults.sh's report: per fault kind, the memory tier's path against
today's (disk only), from each run's stamped log and its faults (scripts/demo/drive.py),
and where a re-run's time went from the cluster's events (`endure list-cluster-events`):
the job whole again (AutoResumeReady; none where the job script re-ran the step itself),
the trainers restored (the next try's start line), its first step.

  faults_report.py [--events EVENTS.json] PREFIX...
      (PREFIX.stamped.jsonl, PREFIX.faults.json; memory-N, disk-N)

Prints a table, and as its very last line one JSON object with every figure and ratio.
"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "common"))
sys.path.insert(0, os.path.join(here, "..", "..", "scripts", "demo"))
import benchlib  # noqa: E402
from report import event_time, restored_from, tries_of  # noqa: E402

KINDS = ["kill", "hang", "crash"]
CRASH_TARGET_S = 1.0


def job_whole(events, after, before):
    """The first AutoResumeReady between two times, or None."""
    for t in sorted(event_time(e) for e in events if e["EventType"] == "AutoResumeReady"):
        if after <= t <= before:
            return t
    return None


def rows_of(prefix, events):
    """Each fault of a run: steps lost, fault -> job whole, trainers restored and first new
    step, the restore's time and tiers."""
    tries, _ = tries_of(benchlib.read_jsonl(prefix + ".stamped.jsonl"))
    with open(prefix + ".faults.json") as f:
        faults = json.load(f)
    rows = []
    for fault in faults:
        before = [i for i, tr in enumerate(tries) if tr["start"]["t"] <= fault["t"]]
        row = {"kind": fault["kind"], "node": fault["node"], "step": fault["step"]}
        if before and before[-1] + 1 < len(tries):
            old, new = tries[before[-1]], tries[before[-1] + 1]
            resumed = new["start"].get("resumed_from") or 0
            last = old["steps"][-1]["step"] if old["steps"] else resumed
            row["steps_lost"] = last - resumed
            row["restored_s"] = new["start"]["t"] - fault["t"]
            whole = job_whole(events, fault["t"], new["start"]["t"])
            row["whole_s"] = None if whole is None else whole - fault["t"]
            if new["steps"]:
                row["first_step_s"] = new["steps"][0]["t"] - fault["t"]
            if "restored" in new:
                row["restore_ms"] = new["restored"].get("restore_ms")
                row["restored_from"] = restored_from(new["restored"])
        rows.append(row)
    return rows


def main():
    prefixes = sys.argv[1:]
    events = []
    if prefixes[:1] == ["--events"]:
        with open(prefixes[1]) as f:
            events = json.load(f)["Events"]
        prefixes = prefixes[2:]
    runs = {"memory": [], "disk": []}
    for p in prefixes:
        runs["memory" if os.path.basename(p).startswith("memory") else "disk"] += rows_of(p, events)

    def pick(path, kind, key):
        return [r[key] for r in runs[path] if r["kind"] == kind and r.get(key) is not None]

    figures = {"faults": runs}
    print("Checkpointless recovery against the disk tier alone: the same faults, one cluster")
    head = ["fault", "path", "steps lost", "job whole", "restored", "first step", "restore",
            "restored from"]
    table = [head]
    for kind in KINDS:
        for path in ("memory", "disk"):
            lost = pick(path, kind, "steps_lost")
            first = pick(path, kind, "first_step_s")
            restore = pick(path, kind, "restore_ms")
            whole = pick(path, kind, "whole_s")
            restored = pick(path, kind, "restored_s")
            tiers = sorted({r for r in pick(path, kind, "restored_from")})
            figures[f"{kind}_{path}_steps_lost_max"] = max(lost) if lost else None
            figures[f"{kind}_{path}_whole_s_median"] = benchlib.median(whole)
            figures[f"{kind}_{path}_restored_s_median"] = benchlib.median(restored)
            figures[f"{kind}_{path}_first_step_s_median"] = benchlib.median(first)
            figures[f"{kind}_{path}_restore_ms_median"] = benchlib.median(restore)
            table.append([kind, path, benchlib.fmt(max(lost) if lost else None, "%d"),
                          benchlib.fmt(benchlib.median(whole), "%.2f") + " s",
                          benchlib.fmt(benchlib.median(restored), "%.2f") + " s",
                          benchlib.fmt(benchlib.median(first), "%.2f") + " s",
                          benchlib.fmt(benchlib.median(restore), "%.0f") + " ms", "; ".join(tiers)])
        figures[f"{kind}_first_step_ratio_disk_over_memory"] = benchlib.ratio(
            figures[f"{kind}_disk_first_step_s_median"], figures[f"{kind}_memory_first_step_s_median"])
    widths = [max(len(str(row[c])) for row in table) for c in range(len(head))]
    for n, row in enumerate(table):
        print("  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
    lost_memory = [r["steps_lost"] for r in runs["memory"] if "steps_lost" in r]
    crash_first = figures["crash_memory_first_step_s_median"]
    figures["steps_lost_max_memory"] = max(lost_memory) if lost_memory else None
    figures["steps_lost_target_met"] = bool(lost_memory) and max(lost_memory) <= 1
    figures["crash_first_step_target_met"] = crash_first is not None and crash_first <= CRASH_TARGET_S
    print(f"steps lost a fault, memory tier: at most {figures['steps_lost_max_memory']} "
          f"(target <= 1): {benchlib.verdict(figures['steps_lost_target_met'])}")
    print(f"node crash -> first new step, memory tier: {benchlib.fmt(crash_first, '%.2f')} s median "
          f"(target <= {CRASH_TARGET_S} s): {benchlib.verdict(figures['crash_first_step_target_met'])}")
    print("(local nodes on one machine; each time counts from the fault's injection: the job "
          "whole again, the next try's trainers restored (its start line), its first step line, "
          "at the time endure-train wrote it)")
    benchlib.print_result(figures)


if __name__ == "__main__":
    main()
