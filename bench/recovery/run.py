#!/usr/bin/env python3
"""Fault to verdict, to drained, to back in service, per fault kind, on a real local cluster;
beside it, in the same run and on the same cluster, Slurm's own detection of a crash.

    python3 bench/recovery/run.py              # 5 trials of each of the 7 kinds (~6 minutes)
    python3 bench/recovery/run.py --smoke      # 1 trial each, no Slurm row: a quick check
    python3 bench/recovery/run.py --trials 9 --kinds crash,hang

Starts its own endured (private ENDURE_HOME under /tmp, port 7401) and one cluster (1
controller + 4 local.c2 workers); deletes both on exit, whatever happens. Progress goes to
stderr; stdout gets a table and, as its very last line, one JSON object with every figure.
Exit status: 0 every measurement completed (targets met or not), 1 a measurement or the
cleanup failed, 2 bad usage or no build, 3 the host is not free for it.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import replace  # noqa: E402  (the replacement rows: cold and warm, local and on hosts)
from benchlib import fmt, print_header, print_result, verdict  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(REPO, "build", "bin")
KINDS = ["crash", "hang", "xid", "ecc", "disk-full", "slurmd-kill", "fsx-hang"]
WORKERS = ["worker-0", "worker-1", "worker-2", "worker-3"]
# The targets, in seconds: detection median per kind, and back in service (crash).
TARGETS = {"crash": 1.0, "hang": 2.0, "xid": 0.5, "ecc": 0.5}
BACK_TARGET = ("crash", 3.0)
NAME = "bench-rec"
T0 = time.time()


def log(msg):
    print("[bench %6.1fs] %s" % (time.time() - T0, msg), file=sys.stderr, flush=True)


class Bench(replace.Cli):
    def __init__(self, args):
        super().__init__(BIN, tempfile.mkdtemp(prefix="bench-rec-"))
        self.args = args
        self.endured = None
        self.cluster_made = False
        self.notes = []

    # ---- the CLI -------------------------------------------------------------------
    def on_head(self, script, timeout=30):
        out = self.endure("exec", "--cluster-name", NAME, "--node", "controller-0", "--", "bash",
                          "-c", script, timeout=timeout, check=False)
        return out.stdout

    def events_after(self, event_id):
        req = json.dumps({"AfterEventId": event_id, "MaxResults": 10000})
        return self.endure_json("list-cluster-events", "--cluster-name", NAME,
                                "--cli-input-json", req).get("Events", [])

    def last_event_id(self):
        return max([e.get("EventId", 0) for e in self.events_after(0)] + [0])

    # ---- endured and the cluster ---------------------------------------------------------
    def start(self):
        port = self.args.port
        if not self.args.no_hosts:
            # Nodes on hosts reach endured over TLS only.
            json.dump({"AgentTlsPort": port + 1000}, open(os.path.join(self.home, "config.json"), "w"))
        with open(os.path.join(self.home, "endured.log"), "ab") as out:
            self.endured = subprocess.Popen(
                [os.path.join(BIN, "endured"), "--home", self.home, "--port", str(port)],
                stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        deadline = time.time() + 10
        while not os.path.exists(os.path.join(self.home, "endpoint")):
            if time.time() > deadline or self.endured.poll() is not None:
                raise RuntimeError("endured did not start (see %s/endured.log)" % self.home)
            time.sleep(0.1)
        spec = json.load(open(os.path.join(REPO, "examples/cluster/local.json")))
        spec["ClusterName"] = NAME
        for g in spec["InstanceGroups"]:
            src = g["LifeCycleConfig"]["SourceS3Uri"]
            g["LifeCycleConfig"]["SourceS3Uri"] = os.path.normpath(
                os.path.join(REPO, "examples/cluster", src))
        path = os.path.join(self.home, "cluster.json")
        json.dump(spec, open(path, "w"))
        log("create-cluster %s (1 controller + 4 workers)" % NAME)
        self.cluster_made = True
        self.endure("create-cluster", "--cli-input-json", "file://" + path, "--wait", timeout=300)

    def stop(self):
        ok = True
        if self.endured and self.endured.poll() is None:
            if self.cluster_made:
                log("cleanup: delete-cluster %s" % NAME)
                out = self.endure("delete-cluster", "--cluster-name", NAME, "--wait",
                                  timeout=400, check=False)
                ok = out.returncode == 0
            self.endured.send_signal(signal.SIGTERM)
            try:
                self.endured.wait(15)
            except subprocess.TimeoutExpired:
                self.endured.kill()
                ok = False
        return ok

    # ---- one trial -------------------------------------------------------------------------
    def settled(self, limit=180):
        """Every node Running and every worker idle in Slurm, within limit seconds."""
        deadline = time.time() + limit
        while time.time() < deadline:
            nodes = self.endure_json("list-cluster-nodes", "--cluster-name", NAME).get(
                "ClusterNodeSummaries", [])
            running = [n for n in nodes if n.get("InstanceStatus", {}).get("Status") == "Running"]
            if len(running) == 5:
                idle = self.on_head("sinfo -h -N -o '%n %t' | sort -u").split("\n")
                if sum(1 for l in idle if l.split()[-1:] == ["idle"]) >= 4:
                    return True
            time.sleep(0.5)
        return False

    def trial(self, kind, node):
        mark = self.last_event_id()
        t_fault = time.time()
        self.endure("debug", "inject-fault", "--cluster-name", NAME, "--node", node, "--kind", kind)
        deadline = t_fault + self.args.trial_timeout
        row = {"kind": kind, "node": node}
        while time.time() < deadline:
            for e in self.events_after(mark):
                if e.get("NodeName") != node:
                    continue
                t = datetime.strptime(e["EventTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=timezone.utc).timestamp() - t_fault
                key = {"NodeUnhealthy": "verdict_s", "NodeDrained": "drained_s",
                       "NodeReturnedToService": "back_s"}.get(e.get("EventType"))
                if key and key not in row:
                    row[key] = round(t, 3)
                    if key == "verdict_s":
                        row["verdict"] = e.get("Description", "")
            if "back_s" in row:
                return row
            time.sleep(0.2)
        row["timed_out"] = True
        return row

    # ---- Slurm's own detection ---------------------------------------------------------
    def slurmd_timeout(self):
        line = self.on_head("scontrol show config | grep -i '^SlurmdTimeout'")
        digits = "".join(c for c in line.split("=")[-1] if c.isdigit())
        return int(digits) if digits else None

    def slurm_detection(self, node):
        """Crash a worker with endured's recovery off; seconds until Slurm marks it not
        responding (state with '*') or down."""
        self.endure("update-cluster", "--cluster-name", NAME, "--node-recovery", "None",
                    "--wait", timeout=120)
        t_fault = time.time()
        self.endure("debug", "inject-fault", "--cluster-name", NAME, "--node", node, "--kind", "crash")
        deadline = t_fault + self.args.slurm_timeout
        while time.time() < deadline:
            state = self.on_head("sinfo -h -n %s -o %%t" % node).strip()
            if "*" in state or state.startswith("down"):
                return {"node": node, "detected_s": round(time.time() - t_fault, 3), "state": state}
            time.sleep(0.2)
        return {"node": node, "detected_s": None, "waited_s": self.args.slurm_timeout}


def stats(values):
    v = [x for x in values if x is not None]
    if not v:
        return None, None
    return round(statistics.median(v), 3), round(max(v), 3)


def report(args, rows, slurm, slurmd_timeout, notes, replacements):
    f = lambda x: fmt(x, "%.2f")
    per_kind = {}
    print()
    print("fault -> verdict (NodeUnhealthy), -> drained (NodeDrained), -> back in service")
    print("(NodeReturnedToService), seconds from the moment before `endure debug inject-fault`;")
    print("one local cluster (1 controller + 4 x local.c2), %d trial(s) per kind" % args.trials)
    print()
    hdr = "%-12s %7s %9s %9s %9s %9s %9s %9s %8s" % (
        "kind", "trials", "verdict", "(max)", "drained", "(max)", "back", "(max)", "target")
    print_header(hdr)
    for kind in args.kinds:
        mine = [r for r in rows if r["kind"] == kind]
        vm, vx = stats([r.get("verdict_s") for r in mine])
        dm, dx = stats([r.get("drained_s") for r in mine])
        bm, bx = stats([r.get("back_s") for r in mine])
        target = TARGETS.get(kind)
        met = None if target is None or vm is None else vm <= target
        per_kind[kind] = {"trials": len(mine), "completed": sum(1 for r in mine if "back_s" in r),
                          "verdict_median_s": vm, "verdict_max_s": vx, "drained_median_s": dm,
                          "drained_max_s": dx, "back_median_s": bm, "back_max_s": bx,
                          "verdict_target_s": target, "verdict_target_met": met}
        print("%-12s %7d %9s %9s %9s %9s %9s %9s %8s" % (
            kind, len(mine), f(vm), f(vx), f(dm), f(dx), f(bm), f(bx),
            "-" if target is None else ("<=%.1f %s" % (target, "ok" if met else "MISS"))))
    crash_median = per_kind.get("crash", {}).get("verdict_median_s")
    ratio = None
    if slurm:
        print()
        d = slurm.get("detected_s")
        print("Slurm's own detection of the same crash (endured's recovery off, SlurmdTimeout=%s s):"
              % slurmd_timeout)
        print("  %s -> not responding/down in sinfo: %s" % (
            slurm["node"], f(d) if d is not None else "not within %d s" % slurm.get("waited_s", 0)))
        if crash_median:
            ratio = round((d if d is not None else slurm.get("waited_s", 0)) / crash_median, 1)
            print("ratio Slurm detection / our crash verdict median: %s%.1fx" % (
                "" if d is not None else ">= ", ratio))
    back = per_kind.get(BACK_TARGET[0], {}).get("back_median_s")
    back_met = None if back is None else back <= BACK_TARGET[1]
    print("back in service after a crash, median <= %.0f s: %s" % (
        BACK_TARGET[1], "-" if back_met is None else verdict(back_met)))
    replaced = replacements.summary() if replacements else {}
    if replaced:
        replacements.print_table(replaced)
    for n in notes:
        print("note: " + n)
    print_result({
        "bench": "recovery", "smoke": args.smoke, "trials_per_kind": args.trials,
        "kinds": per_kind, "rows": rows,
        "slurm_crash_detection_s": slurm.get("detected_s") if slurm else None,
        "slurm": slurm, "slurmd_timeout_s": slurmd_timeout,
        "ratio_slurm_to_ours_crash": ratio,
        "crash_back_median_s": back, "crash_back_target_s": BACK_TARGET[1],
        "crash_back_target_met": back_met,
        "replace": replaced, "replace_rows": replacements.rows if replacements else [],
        "notes": notes,
    }, compact=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--smoke", action="store_true", help="1 trial per kind, no Slurm row")
    p.add_argument("--no-slurm", action="store_true", help="skip Slurm's own detection")
    p.add_argument("--no-replace", action="store_true",
                   help="skip the replacement rows (cold and warm, local and on hosts)")
    p.add_argument("--no-hosts", action="store_true", help="replacement rows on local nodes only")
    p.add_argument("--port", type=int, default=7401)
    p.add_argument("--trial-timeout", type=float, default=120)
    p.add_argument("--slurm-timeout", type=float, default=120)
    args = p.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k]
    bad = [k for k in args.kinds if k not in KINDS]
    if bad or args.trials < 1:
        print("run.py: --kinds takes %s; --trials at least 1" % ",".join(KINDS), file=sys.stderr)
        return 2
    if args.smoke:
        args.trials, args.no_slurm, args.no_hosts = 1, True, True
    if not all(os.access(os.path.join(BIN, b), os.X_OK) for b in ("endured", "endure")):
        print("run.py: no build in %s: run scripts/setup.sh" % BIN, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("run.py: needs root (local nodes are namespaces)", file=sys.stderr)
        return 2
    busy = subprocess.run(["ss", "-Hltn", "( sport >= :16000 and sport <= :17280 ) or sport = :%d"
                           % args.port], capture_output=True, text=True).stdout.strip()
    if busy:
        print("run.py: the ports of a first local cluster (16000-17280) or %d are in use:\n%s"
              % (args.port, busy), file=sys.stderr)
        return 3

    bench = Bench(args)
    rows, slurm, failed, slurmd_timeout = [], None, False, None
    replacements = None
    interrupted = []
    signal.signal(signal.SIGTERM, lambda *_: interrupted.append(1) or sys.exit(130))
    try:
        bench.start()
        for kind in args.kinds:
            for i in range(args.trials):
                node = WORKERS[(len(rows)) % len(WORKERS)]
                if not bench.settled():
                    raise RuntimeError("the cluster did not settle before %s #%d" % (kind, i + 1))
                row = bench.trial(kind, node)
                row["trial"] = i + 1
                rows.append(row)
                log("%-11s #%d %s: verdict %s, drained %s, back %s" % (
                    kind, i + 1, node, row.get("verdict_s"), row.get("drained_s"),
                    row.get("back_s")))
                if row.get("timed_out"):
                    failed = True
                    bench.notes.append("%s #%d on %s: not back within %.0f s" % (
                        kind, i + 1, node, args.trial_timeout))
        if not args.no_replace:
            replacements = replace.Replacements(bench, BIN, NAME, args.trials,
                                                args.trial_timeout, log)
            replacements.run_local(WORKERS)
            if not args.no_hosts:
                replacements.run_hosts(os.path.join(REPO, "examples/lifecycle/base-config"))
        if not args.no_slurm:
            if not bench.settled():
                raise RuntimeError("the cluster did not settle before Slurm's row")
            slurmd_timeout = bench.slurmd_timeout()
            slurm = bench.slurm_detection("worker-1")
            log("Slurm's own detection: %s" % slurm)
            failed |= slurm.get("detected_s") is None
    except Exception as e:  # the report still comes, with what was measured
        failed = True
        bench.notes.append("stopped early: %s" % e)
        log("error: %s\n%s" % (e, traceback.format_exc()))
    finally:
        if replacements and not replacements.close():
            failed = True
            bench.notes.append("the host cluster was not deleted cleanly")
        if not bench.stop():
            failed = True
            bench.notes.append("cleanup was not clean (see %s)" % bench.home)
    report(args, rows, slurm, slurmd_timeout, bench.notes, replacements)
    if not failed:
        shutil.rmtree(bench.home, ignore_errors=True)
    else:
        log("kept %s (endured.log)" % bench.home)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
