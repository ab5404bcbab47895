"""The hosts rows of bench/autoresume: fault -> the re-run step starting, on a cluster of
registered hosts reached over SSH (test hosts built here with endure-test-host, each its
own machine with its own sshd, and a file server for the cluster's /fsx; the same ones
bench/recovery builds), for a cold replace (the pool's next host bootstrapped) and a
warm-spare swap (WarmSpares 1).

The fault is a pulled plug: every process of a worker's host killed at once and its power
command refused, while a 3-node `srun --auto-resume=1` step runs on the workers. endured
finds the host silent, its reset fails, and the node is replaced; the step runs again once
the node is back. The pulled host is then plugged in and returned to the pool.

Run by run.sh against its endured (ENDURE_HOME set, AgentTlsPort in its config.json); each
trial is one line of kind "ours" with provider "hosts" appended to RESULTS.

  python3 hosts.py BIN_DIR LIFECYCLE_DIR UNITS_PY RESULTS TRIALS
"""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "recovery"))
from replace import HOST_PORT, Cli, Replacements, TestHosts, event_time  # noqa: E402

CLUSTER = "bench-ar-hosts"
POOL = "bench-ar"
WORKERS = 3
UNITS = 300           # 100 units per rank ...
UNIT_SECONDS = 0.2    # ... of 0.2 s: 20 s of work per rank, well past the fault
PROGRESS_UNITS = 5    # ~1 s of progress on every rank before the fault
RERUN_TIMEOUT = 120
T0 = time.time()


def log(msg):
    print("[bench hosts %6.1fs] %s" % (time.time() - T0, msg), file=sys.stderr, flush=True)


def lines(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


class HostTrials:
    def __init__(self, bin_dir, lifecycle_dir, units_py, results, trials):
        self.cli = Cli(bin_dir, os.environ["ENDURE_HOME"])  # run.sh's endured
        self.rep = Replacements(self.cli, bin_dir, None, trials, RERUN_TIMEOUT, log)
        self.lifecycle_dir = lifecycle_dir
        self.units_py = units_py
        self.results = results
        self.trials = trials
        self.hosts = None
        self.head = None
        self.created = False

    # ---- the controller host, reached over SSH as a user would ---------------------------
    def on_head(self, script, timeout=30):
        if not self.head:  # the controller's host: never pulled here, so looked up once
            self.head = self.rep.host_of(CLUSTER, "controller-0")
        host = self.head
        h = next(x for x in self.hosts.hosts if x["name"] == host)
        known = os.path.join(self.hosts.dir, host + ".known")
        with open(known, "w") as f:
            f.write("[%s]:%d %s\n" % (h["address"], HOST_PORT, h["key"]))
        out = subprocess.run(
            ["ssh", "-F", "/dev/null", "-p", str(HOST_PORT), "-i", self.hosts.identity, "-o",
             "BatchMode=yes", "-o", "UserKnownHostsFile=" + known, "-o", "LogLevel=ERROR",
             "root@" + h["address"], "--", script],
            capture_output=True, text=True, timeout=timeout)
        return out.stdout

    def workers_idle(self, limit=180):
        deadline = time.time() + limit
        while time.time() < deadline:
            out = self.on_head("sinfo -h -N -o '%N %t'")
            idle = {l.split()[0] for l in out.splitlines() if l.split()[1:] == ["idle"]}
            if all("worker-%d" % i in idle for i in range(WORKERS)):
                return True
            time.sleep(1)
        return False

    # ---- setup ----------------------------------------------------------------------------
    def setup(self):
        log("building 6 test hosts and a file server")
        self.hosts = TestHosts(self.cli.bin_dir, log)
        self.rep.hosts = self.hosts
        pools = os.path.join(self.cli.home, "hosts-pools.json")
        json.dump(self.hosts.pool_file(POOL), open(pools, "w"))
        self.cli.endure("register-host-pools", "--cli-input-json", "file://" + pools)
        group = lambda name, count: {
            "InstanceGroupName": name, "InstanceType": "local.c2", "InstanceCount": count,
            "LifeCycleConfig": {"SourceS3Uri": self.lifecycle_dir, "OnCreate": "on_create.sh"},
            "ThreadsPerCore": 1, "HostPool": POOL}
        spec = {"ClusterName": CLUSTER, "NodeRecovery": "Automatic",
                "InstanceGroups": [group("controller", 1), group("worker", WORKERS)],
                "SharedFileSystem": self.hosts.shared_file_system()}
        path = os.path.join(self.cli.home, "hosts-cluster.json")
        json.dump(spec, open(path, "w"))
        log("create-cluster %s (1 controller + %d workers on hosts, /fsx on the file server)"
            % (CLUSTER, WORKERS))
        self.created = True
        self.cli.endure("create-cluster", "--cli-input-json", "file://" + path, "--wait",
                        timeout=600)
        with open(self.units_py) as src, open(self.served("units.py"), "w") as dst:
            dst.write(src.read())
        if not self.workers_idle():
            raise RuntimeError("the host cluster's workers are not idle")

    def served(self, path):
        full = self.hosts.served(path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        return full

    # ---- one trial --------------------------------------------------------------------------
    def write_job(self, run):
        with open(self.served(run + "/job.sbatch"), "w") as f:
            f.write("#!/bin/bash\n#SBATCH -N%d\n#SBATCH --job-name=%s\n"
                    "#SBATCH --output=/fsx/%s/job-%%j.out\n"
                    "srun --auto-resume=1 -N%d python3 /fsx/units.py --dir /fsx/%s "
                    "--units %d --unit-seconds %s\necho \"srun rc=$?\"\n"
                    % (WORKERS, run, run, WORKERS, run, UNITS, UNIT_SECONDS))

    def progressed(self, run, job):
        starts = lines(self.served(run + "/starts.log"))
        ranks = {s.get("rank") for s in starts if str(s.get("job")) == job}
        if not ranks >= set(range(WORKERS)):
            return False
        for r in range(WORKERS):
            try:
                with open(self.served("%s/done-%d.log" % (run, r))) as f:
                    if sum(1 for l in f if l.strip()) < PROGRESS_UNITS:
                        return False
            except OSError:
                return False
        return True

    def rerun(self, run, t_fault):
        """The re-run's first start, once every rank started again (count 1); else None."""
        again = [s for s in lines(self.served(run + "/starts.log")) if s.get("count") == 1]
        if {s.get("rank") for s in again} >= set(range(WORKERS)):
            return min(s["time"] for s in again) - t_fault
        return None

    def trial(self, mode, i):
        node = ["worker-1", "worker-2", "worker-1", "worker-0", "worker-2"][(i - 1) % 5]
        run = "ar-hosts-%s-%d" % (mode, i)
        self.write_job(run)
        job = self.on_head("sbatch --parsable /fsx/%s/job.sbatch" % run).strip().split(";")[0]
        if not job.isdigit():
            raise RuntimeError("hosts %s #%d: sbatch failed" % (mode, i))
        deadline = time.time() + 120
        while not self.progressed(run, job):
            if time.time() > deadline:
                raise RuntimeError("hosts %s #%d: job %s made no progress" % (mode, i, job))
            time.sleep(0.2)
        batch = self.on_head("squeue -h -j %s -o %%B" % job).strip()
        host = self.rep.host_of(CLUSTER, node)
        mark = self.rep.last_event(CLUSTER)
        t_fault = time.time()
        self.hosts.power(host, "pull")
        row = {"kind": "ours", "provider": "hosts", "mode": mode, "trial": i, "node": node,
               "host": host, "job": int(job), "batch_host": batch == node}
        deadline = t_fault + RERUN_TIMEOUT
        while time.time() < deadline:
            back = self.rerun(run, t_fault)
            if back is not None:
                row.update({"rerun": True, "fault_to_rerun_s": round(back, 3)})
                break
            time.sleep(0.2)
        else:
            row.update({"rerun": False, "fault_to_rerun_s": None,
                        "waited_s": round(time.time() - t_fault, 1)})
        # A requeued job (its batch host pulled) runs before endured records it ready.
        events, ready_by = [], time.time() + 10
        while True:
            events = self.rep.events_after(CLUSTER, mark)
            if any(e.get("EventType") == "AutoResumeReady" for e in events) or \
                    time.time() > ready_by:
                break
            time.sleep(0.5)
        for e in events:
            since = round(event_time(e) - t_fault, 3)
            kind, desc = e.get("EventType"), e.get("Description", "")
            if e.get("NodeName") == node and kind == "NodeUnhealthy":
                row.setdefault("detected_s", since)
            elif e.get("NodeName") == node and kind == "NodeReturnedToService":
                row.setdefault("node_back_s", since)
            elif e.get("NodeName") == node and kind == "WarmSpareSwappedIn":
                row["swapped"] = True
            elif kind == "AutoResumeReady" and desc.startswith("job %s:" % job):
                row.setdefault("job_ready_s", since)
        with open(self.results, "a") as f:
            f.write(json.dumps(row) + "\n")
        log("%s #%d: pulled %s (%s%s): detected %s, back %s, re-run %s s after the fault" % (
            mode, i, host, node, ", batch host" if row["batch_host"] else "",
            row.get("detected_s"), row.get("node_back_s"), row.get("fault_to_rerun_s")))
        self.on_head("scancel %s" % job)
        self.rep.give_back(host)
        if not row["rerun"]:
            raise RuntimeError("hosts %s #%d: no re-run within %d s" % (mode, i, RERUN_TIMEOUT))

    def run(self):
        self.setup()
        for mode, spares in (("cold", 0), ("warm", 1)):
            self.rep.set_spares(CLUSTER, spares)
            for i in range(1, self.trials + 1):
                if not self.rep.settle(CLUSTER, 1 + WORKERS, spares) or not self.workers_idle():
                    raise RuntimeError("host cluster did not settle before %s #%d" % (mode, i))
                self.trial(mode, i)

    def close(self):
        ok = True
        if self.created:
            out = self.cli.endure("delete-cluster", "--cluster-name", CLUSTER, "--wait",
                                  timeout=400, check=False)
            ok = out.returncode == 0
            if not ok:
                log("delete-cluster %s: %s" % (CLUSTER, out.stderr.strip()))
        if self.hosts:
            self.hosts.close()
        return ok


def stop(signum, frame):
    raise SystemExit("stopped by signal %d" % signum)  # close() still runs


def main():
    signal.signal(signal.SIGTERM, stop)
    bin_dir, lifecycle_dir, units_py, results, trials = sys.argv[1:6]
    bench = HostTrials(bin_dir, lifecycle_dir, units_py, results, int(trials))
    ok = True
    try:
        bench.run()
    except (Exception, SystemExit) as e:  # the rows measured so far stay in RESULTS
        log("stopped: %s" % e)
        with open(results, "a") as f:
            f.write(json.dumps({"kind": "note", "note": "hosts rows: %s" % e}) + "\n")
        ok = False
    finally:
        ok = bench.close() and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
