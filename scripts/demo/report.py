#!/usr/bin/env python3
"""The demo's recovery report, from what the run left behind: the trainer's log as
drive.py stamped it, the faults drive.py made, the cluster's events
(`endure list-cluster-events`), and the final checkpoints of the faulty and the fault-free
run. Prints the report and writes it as JSON; exits 1 when the bitwise check fails.

Per fault, every time counts from the fault (its FaultInjected event):
  detect   -> NodeUnhealthy (endured's verdict on the node)
  drain    -> NodeDrained (Slurm schedules nothing more on it)
  back     -> NodeReturnedToService (rebooted, or replaced by a new node or a warm spare)
  running  -> the first step line of the next try (srun --auto-resume=1 re-ran the step)
  lost     -> the interrupted try's last step minus the step the next try resumed from
  restored -> where each rank of the next try read the step from: its own node's memory
              store ("own"), a peer's replica ("peer NODE"), or a disk tier ("shared")
"""
import argparse
import datetime
import hashlib
import json
import os
import sys


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def tries_of(lines):
    """The run as its tries: each a start line and its step lines, in order."""
    tries, done = [], None
    for line in lines:
        if line.get("start"):
            tries.append({"start": line, "steps": []})
        elif "loss" in line and tries:
            tries[-1]["steps"].append(line)
        elif "restored" in line and tries:
            tries[-1]["restored"] = line
        elif "restore_fell_back" in line and tries:
            tries[-1].setdefault("fell_back", []).append(line)
        elif line.get("done"):
            done = line
    return tries, done


def after_done(path):
    """The start lines logged after the first "done": tries of a step that had already ended."""
    out, done = [], False
    for line in read_lines(path):
        done = done or bool(line.get("done"))
        if done and line.get("start"):
            out.append(line)
    return out


def event_time(event):
    return datetime.datetime.strptime(event["EventTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def first_event(events, kind, node, after):
    for e in events:
        if e["EventType"] == kind and e.get("NodeName") == node and e["t"] >= after:
            return e
    return None


def recovery(fault, events, tries):
    """One fault's timeline, in seconds from the fault."""
    injected = first_event(events, "FaultInjected", fault["node"], fault["t"] - 1)
    t0 = injected["t"] if injected else fault["t"]
    r = {"kind": fault["kind"], "node": fault["node"], "step": fault["step"], "t": t0}
    unhealthy = first_event(events, "NodeUnhealthy", fault["node"], t0)
    if unhealthy:
        r["detect_s"] = unhealthy["t"] - t0
        r["action"] = unhealthy["Description"].rsplit("-> ", 1)[-1]
        drained = first_event(events, "NodeDrained", fault["node"], unhealthy["t"])
        back = first_event(events, "NodeReturnedToService", fault["node"], unhealthy["t"])
        if drained:
            r["drain_s"] = drained["t"] - t0
        if back:
            r["back_s"] = back["t"] - t0
            spare = first_event(events, "WarmSpareSwappedIn", fault["node"], t0)
            if r["action"] == "Replace" and spare and spare["t"] <= back["t"]:
                r["action"] = "Replace (warm spare)"
    # The try the fault interrupted, and the next one, which resumed.
    before = [i for i, tr in enumerate(tries) if tr["start"]["t"] <= t0]
    if before and before[-1] + 1 < len(tries):
        old, new = tries[before[-1]], tries[before[-1] + 1]
        resumed = new["start"].get("resumed_from") or 0
        last = old["steps"][-1]["step"] if old["steps"] else resumed
        r.update(last_step=last, resumed_from=resumed, steps_lost=last - resumed)
        if new["steps"]:
            r["running_s"] = new["steps"][0]["t"] - t0
        if "restored" in new:
            r["restored_from"] = restored_from(new["restored"])
            r["restore_ms"] = new["restored"].get("restore_ms")
            r["restored_bytes"] = sum(x["bytes"] for x in new["restored"].get("from", []))
        if new.get("fell_back"):
            r["fell_back_from"] = [x["restore_fell_back"] for x in new["fell_back"]]
    return r


def restored_from(restored):
    """Where the ranks of a try read its step from, as "own x3, peer worker-2": each tier
    with its count of ranks, in rank order of first use."""
    counts = {}
    for r in restored.get("from", []):
        tier = r["tier"]
        if tier.startswith("cluster own node"):
            tier = "own"
        elif tier.startswith("cluster peer "):
            tier = "peer " + tier[len("cluster peer "):]
        counts[tier] = counts.get(tier, 0) + 1
    return ", ".join(t if n == 1 else f"{t} x{n}" for t, n in counts.items())


def kept_steps(tries):
    """Each step's time on the clock, for the steps that were kept: a step made again by a
    later try counts only there. A step's time runs from the line before it in its try."""
    kept = {}
    for tr in tries:
        prev = tr["start"]["t"]
        for s in tr["steps"]:
            kept[s["step"]] = (s["t"] - prev, s["loss"])
            prev = s["t"]
    return kept


def final_checkpoint_check(ckpt, reference, step):
    """Every rank's final shard: the manifest's checksums and the file's own SHA-256, the
    faulty run's against the fault-free run's."""
    name = f"step-{step:012d}"
    result = {"step": step, "ranks": [], "pass": False}
    try:
        with open(os.path.join(ckpt, name, "MANIFEST.json")) as f:
            mine = json.load(f)
        with open(os.path.join(reference, name, "MANIFEST.json")) as f:
            theirs = json.load(f)
    except (OSError, ValueError) as e:
        result["error"] = f"no final checkpoint: {e}"
        return result
    ok = mine["user"] == theirs["user"] and len(mine["shards"]) == len(theirs["shards"])
    for a, b in zip(sorted(mine["shards"], key=lambda s: s["rank"]),
                    sorted(theirs["shards"], key=lambda s: s["rank"])):
        digests = []
        for d in (ckpt, reference):
            with open(os.path.join(d, name, a["file"]), "rb") as f:
                digests.append(hashlib.sha256(f.read()).hexdigest())
        same = (a["chunks"] == b["chunks"] and a["size"] == b["size"] and digests[0] == digests[1])
        ok = ok and same
        result["ranks"].append({"rank": a["rank"], "bytes": a["size"], "chunks": len(a["chunks"]),
                                "sha256": digests[0], "reference_sha256": digests[1],
                                "equal": same})
    result["pass"] = ok
    return result


def fmt(x, unit="s"):
    return "-" if x is None else f"{x:.1f} {unit}" if unit == "s" else str(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stamped", required=True)
    p.add_argument("--faults", required=True)
    p.add_argument("--events", required=True)
    p.add_argument("--log", help="the trainer's own log, read to the job's end")
    p.add_argument("--reference", required=True, help="the fault-free run's log")
    p.add_argument("--ckpt", required=True)
    p.add_argument("--reference-ckpt", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()

    lines = read_lines(a.stamped)
    tries, done = tries_of(lines)
    stalls = sorted(line["stall_ms"] for line in lines if "checkpoint" in line and "stall_ms" in line)
    ref_tries, ref_done = tries_of(read_lines(a.reference))
    with open(a.faults) as f:
        faults = json.load(f)
    with open(a.events) as f:
        events = json.load(f)["Events"]
    for e in events:
        e["t"] = event_time(e)
    rows = [recovery(fault, events, tries) for fault in faults]

    kept = kept_steps(tries)
    final_step = max(kept) if kept else 0
    wall = (done or tries[-1]["steps"][-1])["t"] - tries[0]["start"]["t"]
    productive = sum(dt for dt, _ in kept.values())
    ref_losses = {s["step"]: s["loss"] for tr in ref_tries for s in tr["steps"]}
    ref_wall = ref_done["seconds"] if ref_done else None  # its start line to its end
    same_losses = all(ref_losses.get(s) == loss for s, (_, loss) in kept.items())
    check = final_checkpoint_check(a.ckpt, a.reference_ckpt, final_step)

    print("RECOVERY REPORT")
    head = ["#", "fault", "node", "at step", "action", "detect", "drain", "back", "running",
            "steps lost", "restored from"]
    table = [head]
    for i, r in enumerate(rows, 1):
        table.append([str(i), r["kind"], r["node"], str(r["step"]), r.get("action", "-"),
                      fmt(r.get("detect_s")), fmt(r.get("drain_s")), fmt(r.get("back_s")),
                      fmt(r.get("running_s")),
                      f"{r['steps_lost']} ({r['last_step']}->{r['resumed_from']})"
                      if "steps_lost" in r else "-",
                      r.get("restored_from", "-")])
    widths = [max(len(row[c]) for row in table) for c in range(len(head))]
    for n, row in enumerate(table):
        print("  " + "  ".join(cell.ljust(w) if c < 5 or c == len(head) - 1 else cell.rjust(w)
                               for c, (cell, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
    print("  (seconds from the fault: detect = NodeUnhealthy, drain = NodeDrained, back = "
          "NodeReturnedToService,\n   running = the first step of the next try; steps lost = "
          "the interrupted try's last step -> the step resumed from;\n   restored from = "
          "each rank's copy: own = its node's memory store, peer = a replica, shared = /fsx)")
    for i, r in enumerate(rows, 1):
        if r.get("fell_back_from"):
            print(f"  fault {i}: step(s) {r['fell_back_from']} could not be read by every rank; "
                  "an older step was restored")
    extra = len(tries) - 1 - len(rows)
    if extra > 0:
        print(f"  note: {extra} more resume(s) than faults made (a node judged unhealthy on its own)")
    after = after_done(a.log) if a.log else []
    for start in after:
        print(f"  note: after the run was done, srun --auto-resume=1 re-ran the step once more "
              f"(resume {start.get('auto_resume_count')}, from step {start.get('resumed_from')}: "
              f"{start.get('auto_resume_reason', '')[:60]}...)")
    print()
    print(f"tries of the step:        {len(tries)} (resumes: "
          f"{', '.join(str(t['start'].get('auto_resume_count')) for t in tries[1:]) or 'none'})")
    if stalls:
        print(f"checkpoints:              {len(stalls)} saved asynchronously, the step stalled "
              f"{stalls[len(stalls) // 2]:.1f} ms for each (median; max {stalls[-1]:.1f} ms)")
    print(f"effective training time:  {productive:.1f} s productive / {wall:.1f} s wall = "
          f"{productive / wall:.3f}")
    print("  (productive: the time of the steps that were kept, each from the log line before "
          "it;\n   wall: the first try's start to the run's end; a step made again counts once)")
    if ref_wall:
        print(f"fault-free run:           {ref_wall:.1f} s wall for the same {final_step} steps "
              f"(the faults cost {wall - ref_wall:+.1f} s)")
    final_loss = kept[final_step][1] if kept else None
    print(f"final loss:               {final_loss:.4f} at step {final_step} "
          f"(fault-free run: {ref_losses.get(final_step, float('nan')):.4f}); "
          f"every step's loss equal: {'yes' if same_losses else 'NO'}")
    print(f"final weights, step {final_step}, against the fault-free run "
          "(manifest checksums and SHA-256 of every rank's shard):")
    for r in check["ranks"]:
        print(f"  rank {r['rank']}: {r['bytes']} bytes, {r['chunks']} chunks, "
              f"sha256 {r['sha256'][:16]}  {'==' if r['equal'] else '!='}  "
              f"{r['reference_sha256'][:16]}")
    if "error" in check:
        print("  " + check["error"])
    print(f"bitwise check: {'PASS' if check['pass'] else 'FAIL'}")

    report = {"faults": rows, "tries": len(tries), "productive_s": productive, "wall_s": wall,
              "effective_ratio": productive / wall, "reference_wall_s": ref_wall,
              "checkpoints": len(stalls), "resumes_after_done": len(after), "final_step": final_step, "final_loss": final_loss, "losses_equal": same_losses,
              "bitwise": check, "t0": tries[0]["start"]["t"]}
    with open(a.out, "w") as f:
        json.dump(report, f, indent=1)
    sys.exit(0 if check["pass"] else 1)


if __name__ == "__main__":
    main()
