"""bench/autoresume's figures: its run files, the cluster's events, each trial's row of
results.jsonl, the statistics and the report (a table for people, then one JSON line),
called by run.sh as `python3 figures.py COMMAND ARGS...`."""
import json, os, sys
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from benchlib import fmt, median, print_header, print_result, ratio, read_jsonl, verdict  # noqa: E402

def count_lines(path):
    try:
        with open(path) as f:
            return sum(1 for l in f if l.strip())
    except OSError:
        return 0

def epoch(iso):
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=__import__("datetime").timezone.utc).timestamp()

def r3(x):
    return None if x is None else round(x, 3)

cmd = sys.argv[1]
if cmd == "progress":            # DIR JOB MIN_UNITS: every rank started (this job) and did MIN_UNITS
    d, job, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    ranks = {s.get("rank") for s in read_jsonl(os.path.join(d, "starts.log")) if str(s.get("job")) == job}
    ok = ranks >= {0, 1, 2, 3} and all(count_lines(os.path.join(d, "done-%d.log" % r)) >= n for r in range(4))
    sys.exit(0 if ok else 1)
elif cmd == "rerun":             # DIR T_FAULT MODE: ours = count==1 on all 4 ranks; peer = any start after the fault
    d, tf, mode = sys.argv[2], float(sys.argv[3]), sys.argv[4]
    s = read_jsonl(os.path.join(d, "starts.log"))
    if mode == "ours":
        r = [x for x in s if x.get("count") == 1]
        if {x.get("rank") for x in r} >= {0, 1, 2, 3}:
            first = min(r, key=lambda x: x["time"])
            print(json.dumps({"fault_to_rerun_s": round(first["time"] - tf, 3), "rerun_starts": len(r),
                              "reason": first.get("reason", "")}))
            sys.exit(0)
    else:
        r = [x for x in s if x.get("time", 0) > tf]
        if r:
            print(json.dumps({"fault_to_rerun_s": round(min(x["time"] for x in r) - tf, 3),
                              "restart_ranks_seen": len({x.get("rank") for x in r})}))
            sys.exit(0)
    sys.exit(1)
elif cmd == "events":            # EVENTS_JSON T_FAULT NODE JOB NEED: seconds from the fault to each event
    ev = json.load(open(sys.argv[2])).get("Events", [])
    tf, node, job, need = float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6].split(",")
    def first(typ, pred=lambda e: True):
        for e in ev:
            if e.get("EventType") == typ and pred(e):
                return epoch(e["EventTime"]) - tf
        return None
    out = {
        "fault_injected_s": first("FaultInjected", lambda e: e.get("NodeName") == node),
        "detected_s": first("NodeUnhealthy", lambda e: e.get("NodeName") == node),
        "node_back_s": first("NodeReturnedToService", lambda e: e.get("NodeName") == node),
        "resume_requested_s": first("AutoResumeRequested", lambda e: e.get("Description", "").startswith("job %s:" % job)),
        "job_ready_s": first("AutoResumeReady", lambda e: e.get("Description", "").startswith("job %s:" % job)),
    }
    out = {k: r3(v) for k, v in out.items()}
    print(json.dumps(out))
    sys.exit(0 if all(out.get(k) is not None for k in need if k) else 1)
elif cmd == "maxid":             # EVENTS_JSON: the newest event id
    ev = json.load(open(sys.argv[2])).get("Events", [])
    print(max([e.get("EventId", 0) for e in ev] + [0]))
elif cmd == "arn-id":            # DESCRIBE_JSON: the cluster id (last part of ClusterArn)
    print(json.load(open(sys.argv[2]))["ClusterArn"].rsplit("/", 1)[-1])
elif cmd == "field":             # JSON_FILE KEY
    print(json.load(open(sys.argv[2])).get(sys.argv[3], ""))
elif cmd == "trial-row":         # TRIAL NODE JOB BATCH_HOST RERUN_JSON WAITED FIGURES_JSON MODE: an auto-resume trial's row
    trial, node, job, bh, rerun, waited, figs, mode = sys.argv[2:]
    r = {"kind": "ours", "mode": mode, "trial": int(trial), "node": node, "job": int(job), "batch_host": bh == node}
    r.update(json.loads(figs))
    if rerun:
        r["rerun"] = True
        r.update(json.loads(rerun))
    else:
        r.update({"rerun": False, "fault_to_rerun_s": None, "waited_s": float(waited)})
    print(json.dumps(r))
elif cmd == "peer-row":          # KIND NODE JOB RESTART_JSON WAITED WAIT_S STATE FIGURES_JSON: a plain-Slurm trial's row
    kind, node, job, restart, waited, wait_s, st, figs = sys.argv[2:]
    f = json.loads(figs)
    r = {"kind": kind, "node": node, "job": int(job), "wait_limit_s": int(wait_s), "waited_s": float(waited),
         "state_after": st, "detected_s": f.get("detected_s"), "node_back_s": f.get("node_back_s")}
    if restart:
        r["restarted"] = True
        r.update(json.loads(restart))
    else:
        r.update({"restarted": False, "fault_to_rerun_s": None})
    print(json.dumps(r))
elif cmd == "warm-spares":       # DESCRIBE_JSON: the worker group's ready warm spares
    for g in json.load(open(sys.argv[2])).get("InstanceGroups", []):
        if g["InstanceGroupName"] == "worker":
            print(g.get("CurrentWarmSpares", 0))
elif cmd == "report":            # RESULTS_JSONL TRIALS PEER_WAIT TARGET_S SMOKE NO_REPAIR_WAIT WARM_TARGET_S
    rows = read_jsonl(sys.argv[2])
    trials_wanted, peer_wait, target, smoke, nr_wait = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == "1", int(sys.argv[7])
    warm_target = float(sys.argv[8])
    def ours_of(provider, mode):
        return [r for r in rows if r.get("kind") == "ours" and r.get("provider", "local") == provider
                and r.get("mode", "cold") == mode]
    ours, warm = ours_of("local", "cold"), ours_of("local", "warm")
    hcold, hwarm = ours_of("hosts", "cold"), ours_of("hosts", "warm")
    peer = next((r for r in rows if r.get("kind") == "peer"), None)
    nrep = next((r for r in rows if r.get("kind") == "peer_no_repair"), None)
    notes = [r.get("note") for r in rows if r.get("kind") == "note"]
    f = lambda x: fmt(x, "%.1f")
    print()
    print("auto-resume vs plain Slurm requeue, same local cluster (1 controller + 4 x local.c2), same fault (crash)")
    print("times in seconds from the fault (the moment before `endure debug inject-fault --kind crash`)")
    print()
    hdr = "%-24s %-22s %10s %11s %11s %14s" % ("trial", "node", "->detected", "->node back", "->job ready", "->re-run start")
    print_header(hdr)
    def trial_rows(label, rs):
        for r in rs:
            node = r["node"] + (" (batch host)" if r.get("batch_host") else "")
            rr = f(r.get("fault_to_rerun_s")) if r.get("rerun") else "none in %ds" % r.get("waited_s", 0)
            print("%-24s %-22s %10s %11s %11s %14s" % ("%s #%d" % (label, r["trial"]), node, f(r.get("detected_s")),
                  f(r.get("node_back_s")), f(r.get("job_ready_s")), rr))
        vals = [r["fault_to_rerun_s"] for r in rs if r.get("rerun")]
        med = median(vals)
        if vals:
            print("%-24s %-22s %10s %11s %11s %14s" % (label + " median", "(%d of %d re-ran)" % (len(vals), len(rs)), "", "", "", f(med)))
            print("%-24s %-22s %10s %11s %11s %14s" % (label + " min / max", "", "", "", "", "%s / %s" % (f(min(vals)), f(max(vals)))))
        return vals, med, (min(vals) if vals else None), (max(vals) if vals else None)
    vals, med, mn, mx = trial_rows("auto-resume", ours)
    wvals, wmed, wmn, wmx = trial_rows("warm spare", warm)
    hvals, hmed, hmn, hmx = trial_rows("hosts cold", hcold)
    hwvals, hwmed, hwmn, hwmx = trial_rows("hosts warm spare", hwarm)
    def after_detection(rs):
        v = [r["fault_to_rerun_s"] - r["detected_s"] for r in rs if r.get("rerun") and r.get("detected_s") is not None]
        return (r3(median(v)), r3(max(v))) if v else (None, None)
    hcold_det, hwarm_det = after_detection(hcold), after_detection(hwarm)
    for label, r in (("plain Slurm requeue", peer), ("plain Slurm, no repair", nrep)):
        if not r:
            continue
        rr = f(r.get("fault_to_rerun_s")) if r.get("restarted") else "none in %.0fs" % r.get("waited_s", 0)
        print("%-24s %-22s %10s %11s %11s %14s" % (label, r["node"], f(r.get("detected_s")), f(r.get("node_back_s")), "n/a", rr))
    print()
    print("->detected: NodeUnhealthy event; ->node back: NodeReturnedToService (the node replaced);")
    print("->job ready: AutoResumeReady; ->re-run start: the first start of the step again, from its")
    print("  starts.log (auto-resume: ENDURE_AUTO_RESUME_COUNT=1 seen on all 4 ranks).")
    if any(r.get("batch_host") for r in ours):
        print("(batch host): the job's first node, where the batch script runs: endured requeues the job")
        print("  under the same id and makes it eligible at once; elsewhere it grows the job back.")
    if peer:
        print("plain Slurm requeue: sbatch --requeue --no-kill=off, srun without --auto-resume; endure still")
        print("  repairs (replaces) the crashed node here, so the requeued job can run again on 4 nodes;")
        print("  Slurm holds a requeued job ~120 s (BeginTime) before it is eligible. Job state at the end")
        print("  of the wait: %s" % (peer.get("state_after") or "-"))
    else:
        print("plain Slurm requeue: not measured (see notes)")
    if nrep:
        print("plain Slurm, no repair: the same job after `endure update-cluster --node-recovery None`:")
        print("  endured only drains the crashed node (not DOWN), so the job ends when Slurm itself finds the")
        print("  node dead (SlurmdTimeout 15 s + its ping cycle), and the requeued job then needs 4 nodes")
        print("  where 3 are left: it cannot restart. Waited min(PEER_WAIT, 60) = %d s." % nr_wait)
        print("  Job state at the end of the wait: %s" % (nrep.get("state_after") or "-"))
    peer_ratio = None
    lower = False
    if peer and med:
        if peer.get("restarted"):
            peer_ratio = peer["fault_to_rerun_s"] / med
        else:
            peer_ratio = peer_wait / med
            lower = True
    if peer_ratio is not None:
        if lower:
            print("ratio (lower bound: plain Slurm had not restarted after PEER_WAIT = %d s): >= %.1fx  (PEER_WAIT / our median)" % (peer_wait, peer_ratio))
        else:
            print("ratio plain Slurm requeue / our median fault->re-run: %.1fx" % peer_ratio)
    else:
        print("ratio: not available")
    met = med is not None and med <= target and len(vals) == len(ours) == trials_wanted
    print("target: median fault->re-run <= %d s: %s" % (target, verdict(met)))
    warm_ratio = ratio(med, wmed)
    warm_met = wmed is not None and wmed <= warm_target and len(wvals) == len(warm) == trials_wanted
    if warm:
        print("warm spare: the crashed node's name taken by the group's warm spare (WarmSpares 1)")
        print("ratio cold / warm median fault->re-run: %s" % ("-" if warm_ratio is None else "%.1fx" % warm_ratio))
        print("target: median fault->re-run <= %.1f s with a warm spare: %s" % (warm_target, verdict(warm_met)))
    if hcold or hwarm:
        print("hosts: 1 controller + 3 workers on test hosts reached over SSH, /fsx on a file server")
        print("  (sshfs), a 3-node step; the fault is a worker's host's plug pulled (found by its")
        print("  silence; its power command refused), so detection takes longer than a crash's.")
        print("  detected -> re-run start, median / max: cold %s / %s, warm %s / %s" % (
            f(hcold_det[0]), f(hcold_det[1]), f(hwarm_det[0]), f(hwarm_det[1])))
        hosts_ratio = ratio(hmed, hwmed)
        if hosts_ratio is not None:
            print("ratio hosts cold / warm median fault->re-run: %.1fx" % hosts_ratio)
    if smoke:
        print("(smoke run: 1 trial, PEER_WAIT 10 s, no hosts: a check that the bench works, not a measurement)")
    for n in notes:
        print("note: " + n)
    out = {
        "bench": "autoresume",
        "smoke": smoke,
        "trials_requested": trials_wanted,
        "trials": ours,
        "ours_median_s": r3(med), "ours_min_s": r3(mn), "ours_max_s": r3(mx),
        "peer_requeue_s": r3(peer.get("fault_to_rerun_s")) if peer and peer.get("restarted") else None,
        "peer_requeue_restarted": bool(peer and peer.get("restarted")),
        "peer_waited_s": r3(peer.get("waited_s")) if peer else None,
        "peer_wait_s": peer_wait,
        "peer": peer,
        "peer_no_repair": nrep,
        "ratio": r3(peer_ratio), "ratio_is_lower_bound": lower,
        "target_s": int(target), "target_met": met,
        "warm_trials": warm,
        "ours_warm_median_s": r3(wmed), "ours_warm_min_s": r3(wmn), "ours_warm_max_s": r3(wmx),
        "ratio_cold_to_warm": r3(warm_ratio),
        "warm_target_s": warm_target, "warm_target_met": warm_met,
        "hosts_cold_trials": hcold, "hosts_warm_trials": hwarm,
        "hosts_cold_median_s": r3(hmed), "hosts_cold_max_s": r3(hmx),
        "hosts_warm_median_s": r3(hwmed), "hosts_warm_max_s": r3(hwmx),
        "hosts_ratio_cold_to_warm": r3(ratio(hmed, hwmed)),
        "hosts_cold_detected_to_rerun_median_s": hcold_det[0],
        "hosts_warm_detected_to_rerun_median_s": hwarm_det[0],
        "notes": notes,
    }
    print_result(out, compact=True)
