"""Replacement rows of bench/recovery: fault -> back in service for a cold replace (a new
instance launched, or on hosts a new host bootstrapped) and for a warm-spare swap, on local
nodes and on hosts reached over SSH (test hosts this bench builds with endure-test-host:
each its own machine with its own sshd on a 127.0.58.x address, and a file server on
127.0.57.1 for the cluster's /fsx).

Local: worker crashes (`endure debug inject-fault --kind crash`), cold with WarmSpares 0,
then warm with WarmSpares 1. Hosts: a cluster of 1 controller + 2 workers on a pool of 6
hosts; a worker's host has its plug pulled (every process of it killed, its power command
refused): endured finds it silent, its reset fails, and it is replaced; the host is then
plugged in, powered on and returned to the pool for the next trial.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import datetime, timezone

HOST_SET = 58  # 127.0.58.x: not a set the integration tests use
FILE_SERVER = "127.0.57.1"  # serves the host cluster's /fsx over SSH; in no pool
EXPORT = "/local/export/bench"  # its folder (under one of the host's own folders)
HOST_PORT = 2222
HOSTS = 6
HOST_CLUSTER = "bench-hosts"
WARM_TARGET_S = 1.0  # a warm-spare swap back in service, median, after the verdict


def event_time(e):
    return datetime.strptime(e["EventTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=timezone.utc).timestamp()


class Cli:
    """The endure CLI against one endured, by its ENDURE_HOME (never a caller's endpoint)."""

    def __init__(self, bin_dir, home):
        self.bin_dir = bin_dir
        self.home = home
        self.env = dict(os.environ, ENDURE_HOME=home)
        for k in ("ENDURE_ENDPOINT", "ENDURE_TOKEN"):
            self.env.pop(k, None)

    def endure(self, *argv, timeout=60, check=True):
        out = subprocess.run([os.path.join(self.bin_dir, "endure"), *argv], env=self.env,
                             timeout=timeout, capture_output=True, text=True)
        if check and out.returncode != 0:
            raise RuntimeError("endure %s: %s" % (" ".join(argv[:2]), out.stderr.strip()))
        return out

    def endure_json(self, *argv, timeout=60):
        return json.loads(self.endure(*argv, timeout=timeout).stdout or "{}")


class TestHosts:
    """Hosts built and powered on here, and a file server for the cluster's /fsx; every one
    powered off and removed by close()."""

    def __init__(self, bin_dir, log, count=HOSTS):
        self.tool = os.path.join(bin_dir, "endure-test-host")
        self.dir = tempfile.mkdtemp(prefix="bench-hosts-")
        self.log = log
        self.hosts = []
        key = os.path.join(self.dir, "id_ed25519")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
        self.identity = key
        self.file_server = self.build("fs-1", FILE_SERVER)
        for i in range(1, count + 1):
            self.hosts.append(self.build("host-%d" % i, "127.0.%d.%d" % (HOST_SET, i)))

    def build(self, name, address):
        path = os.path.join(self.dir, name)
        subprocess.run([self.tool, "build", path, "--name", name, "--address", address,
                        "--port", str(HOST_PORT), "--authorized-key", self.identity + ".pub"],
                       check=True, capture_output=True, timeout=60)
        pub = open(os.path.join(path, "etc/ssh/ssh_host_ed25519_key.pub")).read().split()
        host = {"name": name, "address": address, "dir": path, "key": pub[0] + " " + pub[1]}
        self.power(name, "on")
        return host

    def shared_file_system(self):
        """The spec's SharedFileSystem: the file server's folder EXPORT."""
        fs = self.file_server
        return {"DnsName": fs["address"], "Port": HOST_PORT, "MountName": EXPORT,
                "HostKey": fs["key"], "IdentityFile": self.identity}

    def served(self, path):
        """The path on this machine of a file in the file server's folder (the host's own
        folders are folders of its directory here)."""
        return os.path.join(self.file_server["dir"], EXPORT.lstrip("/"), path)

    def power(self, name, verb):
        path = os.path.join(self.dir, name)
        return subprocess.run([self.tool, verb, path], capture_output=True, text=True,
                              timeout=30).returncode == 0

    def pool_file(self, pool):
        return {"Pools": [{
            "PoolName": pool, "IdentityFile": self.identity,
            "PowerCommand": self.tool + " {action} " + self.dir + "/{host}",
            "Hosts": [{"HostName": h["name"], "Address": h["address"], "Port": HOST_PORT,
                       "HostKey": h["key"]} for h in self.hosts]}]}

    def close(self):
        for h in self.hosts + [self.file_server]:
            self.power(h["name"], "off")
        shutil.rmtree(self.dir, ignore_errors=True)


class Replacements:
    def __init__(self, bench, bin_dir, local_cluster, trials, timeout, log):
        self.b = bench
        self.bin_dir = bin_dir
        self.local = local_cluster
        self.trials = trials
        self.timeout = timeout
        self.log = log
        self.rows = []
        self.hosts = None

    # ---- the cluster's view ------------------------------------------------------------
    def nodes(self, cluster):
        out = self.b.endure_json("list-cluster-nodes", "--cluster-name", cluster)
        return {n["NodeName"]: n for n in out.get("ClusterNodeSummaries", [])}

    def ready_spares(self, cluster):
        out = self.b.endure_json("describe-cluster", "--cluster-name", cluster)
        for g in out.get("InstanceGroups", []):
            if g.get("InstanceGroupName") == "worker":
                return g.get("CurrentWarmSpares", 0)
        return 0

    def events_after(self, cluster, mark):
        req = json.dumps({"AfterEventId": mark, "MaxResults": 10000})
        return self.b.endure_json("list-cluster-events", "--cluster-name", cluster,
                                  "--cli-input-json", req).get("Events", [])

    def last_event(self, cluster):
        return max([e.get("EventId", 0) for e in self.events_after(cluster, 0)] + [0])

    def settle(self, cluster, running, spares, limit=300):
        """running nodes Running and `spares` spares ready, within limit seconds."""
        deadline = time.time() + limit
        while time.time() < deadline:
            states = [n["InstanceStatus"]["Status"] for n in self.nodes(cluster).values()]
            if states.count("Running") == running and self.ready_spares(cluster) == spares:
                return True
            time.sleep(0.5)
        return False

    def set_spares(self, cluster, n):
        out = self.b.endure_json("describe-cluster", "--cluster-name", cluster)
        now = [g.get("WarmSpares", 0) for g in out.get("InstanceGroups", [])
               if g.get("InstanceGroupName") == "worker"]
        if now == [n]:
            return
        self.b.endure("update-cluster", "--cluster-name", cluster, "--instance-group-name",
                      "worker", "--warm-spares", str(n), "--wait", timeout=600)

    # ---- one trial -----------------------------------------------------------------------
    def trial(self, cluster, provider, mode, node, fault):
        mark = self.last_event(cluster)
        before = self.nodes(cluster)[node]["InstanceId"]
        t_fault = time.time()
        fault()
        row = {"provider": provider, "mode": mode, "node": node, "old_instance": before}
        deadline = t_fault + self.timeout
        while time.time() < deadline:
            for e in self.events_after(cluster, mark):
                if e.get("NodeName") != node:
                    continue
                kind = e.get("EventType")
                if kind == "NodeUnhealthy" and "verdict_t" not in row:
                    row["verdict_t"] = event_time(e)
                if kind == "WarmSpareSwappedIn":
                    row["swapped"] = True
                if kind == "NodeReturnedToService":
                    row["back_s"] = round(event_time(e) - t_fault, 3)
                    if "verdict_t" in row:
                        row["verdict_s"] = round(row["verdict_t"] - t_fault, 3)
                        row["verdict_to_back_s"] = round(event_time(e) - row["verdict_t"], 3)
                    row.pop("verdict_t", None)
                    row["new_instance"] = self.nodes(cluster)[node]["InstanceId"]
                    return row
            time.sleep(0.1)
        row.pop("verdict_t", None)
        row["timed_out"] = True
        return row

    def record(self, row):
        self.rows.append(row)
        self.log("%s %s #%d %s: verdict %s, back %s (%s after the verdict)%s" % (
            row["provider"], row["mode"], len([r for r in self.rows if r["provider"] ==
                                               row["provider"] and r["mode"] == row["mode"]]),
            row["node"], row.get("verdict_s"), row.get("back_s"), row.get("verdict_to_back_s"),
            "" if row["mode"] == "cold" or row.get("swapped") else " NOT SWAPPED"))
        if row.get("timed_out"):
            raise RuntimeError("%s %s on %s: not back within %.0f s" % (
                row["provider"], row["mode"], row["node"], self.timeout))

    # ---- local nodes -----------------------------------------------------------------------
    def run_local(self, workers):
        cluster = self.local
        crash = lambda node: (lambda: self.b.endure(
            "debug", "inject-fault", "--cluster-name", cluster, "--node", node, "--kind", "crash"))
        for mode, spares in (("cold", 0), ("warm", 1)):
            self.set_spares(cluster, spares)
            for i in range(self.trials):
                if not self.settle(cluster, 1 + len(workers), spares):
                    raise RuntimeError("local cluster did not settle before %s #%d" % (mode, i + 1))
                node = workers[i % len(workers)]
                self.record(self.trial(cluster, "local", mode, node, crash(node)))
        self.set_spares(cluster, 0)

    # ---- hosts over SSH ----------------------------------------------------------------------
    def host_of(self, cluster, node):
        instance = self.nodes(cluster)[node]["InstanceId"]
        for h in self.b.endure_json("list-hosts", "--output", "json").get("HostSummaries", []):
            if h.get("InstanceId") == instance:
                return h["HostName"]
        return None

    def give_back(self, host):
        """The pulled host repaired: plugged in, powered on and returned to its pool."""
        self.hosts.power(host, "plug")
        self.hosts.power(host, "on")
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.b.endure("return-host", "--host-name", host, check=False).returncode == 0:
                return
            time.sleep(1)
        raise RuntimeError("%s did not pass its checks again within 60 s" % host)

    def run_hosts(self, lifecycle_dir):
        self.log("building %d test hosts" % HOSTS)
        self.hosts = TestHosts(self.bin_dir, self.log)
        pools = os.path.join(self.b.home, "pools.json")
        json.dump(self.hosts.pool_file("bench"), open(pools, "w"))
        self.b.endure("register-host-pools", "--cli-input-json", "file://" + pools)
        group = lambda name, count: {
            "InstanceGroupName": name, "InstanceType": "local.c2", "InstanceCount": count,
            "LifeCycleConfig": {"SourceS3Uri": lifecycle_dir, "OnCreate": "on_create.sh"},
            "ThreadsPerCore": 1, "HostPool": "bench"}
        spec = {"ClusterName": HOST_CLUSTER, "NodeRecovery": "Automatic",
                "InstanceGroups": [group("controller", 1), group("worker", 2)],
                "SharedFileSystem": self.hosts.shared_file_system()}
        path = os.path.join(self.b.home, "hosts-cluster.json")
        json.dump(spec, open(path, "w"))
        self.log("create-cluster %s (1 controller + 2 workers on hosts)" % HOST_CLUSTER)
        self.b.endure("create-cluster", "--cli-input-json", "file://" + path, "--wait",
                      timeout=600)
        for mode, spares in (("cold", 0), ("warm", 1)):
            self.set_spares(HOST_CLUSTER, spares)
            for i in range(self.trials):
                if not self.settle(HOST_CLUSTER, 3, spares):
                    raise RuntimeError("host cluster did not settle before %s #%d" % (mode, i + 1))
                node = "worker-%d" % (i % 2)
                host = self.host_of(HOST_CLUSTER, node)
                row = self.trial(HOST_CLUSTER, "hosts", mode, node,
                                 lambda: self.hosts.power(host, "pull"))
                row["host"] = host
                self.record(row)
                self.give_back(host)

    def close(self):
        ok = True
        if self.hosts:
            out = self.b.endure("delete-cluster", "--cluster-name", HOST_CLUSTER, "--wait",
                                timeout=400, check=False)
            ok = out.returncode == 0 or "ResourceNotFound" in out.stderr
            self.hosts.close()
        return ok

    # ---- the report --------------------------------------------------------------------------
    def summary(self):
        out = {}
        for provider in ("local", "hosts"):
            for mode in ("cold", "warm"):
                mine = [r for r in self.rows if r["provider"] == provider and r["mode"] == mode]
                if not mine:
                    continue
                pick = lambda k: [r[k] for r in mine if r.get(k) is not None]
                med = lambda v: round(statistics.median(v), 3) if v else None
                top = lambda v: round(max(v), 3) if v else None
                out["%s_%s" % (provider, mode)] = {
                    "trials": len(mine), "swapped": sum(1 for r in mine if r.get("swapped")),
                    "back_median_s": med(pick("back_s")), "back_max_s": top(pick("back_s")),
                    "verdict_to_back_median_s": med(pick("verdict_to_back_s")),
                    "verdict_to_back_max_s": top(pick("verdict_to_back_s"))}
        for provider in ("local", "hosts"):
            cold, warm = out.get(provider + "_cold"), out.get(provider + "_warm")
            if cold and warm and warm["back_median_s"]:
                warm["ratio_cold_to_warm_back"] = round(
                    cold["back_median_s"] / warm["back_median_s"], 1)
            if warm and warm["verdict_to_back_median_s"] is not None:
                warm["target_s"] = WARM_TARGET_S
                warm["target_met"] = warm["verdict_to_back_median_s"] <= WARM_TARGET_S
        return out

    def print_table(self, summary):
        f = lambda x: "-" if x is None else "%.2f" % x
        print()
        print("replacement: fault -> back in service (NodeReturnedToService), and from the")
        print("verdict (NodeUnhealthy) -> back in service; cold: a new instance (on hosts, a new")
        print("host bootstrapped); warm: the group's warm spare swapped in")
        print()
        hdr = "%-7s %-5s %6s %9s %9s %11s %9s %10s %14s" % (
            "nodes", "mode", "trials", "back", "(max)", "verdict->", "(max)", "cold/warm",
            "target")
        print(hdr)
        print("-" * len(hdr))
        for key, s in summary.items():
            provider, mode = key.split("_")
            target = "-"
            if "target_met" in s:
                target = "<=%.1f %s" % (s["target_s"], "ok" if s["target_met"] else "MISS")
            ratio = s.get("ratio_cold_to_warm_back")
            print("%-7s %-5s %6d %9s %9s %11s %9s %10s %14s" % (
                provider, mode, s["trials"], f(s["back_median_s"]), f(s["back_max_s"]),
                f(s["verdict_to_back_median_s"]), f(s["verdict_to_back_max_s"]),
                "-" if ratio is None else "%.1fx" % ratio, target))
