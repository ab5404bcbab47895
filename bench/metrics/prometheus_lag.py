"""How long after the API shows a node leave Running Prometheus sees it in endure_nodes,
scraping endured every second: the figure tests/integration/metrics_test.cpp once asserted.
Its reference is one scrape interval plus the /metrics collector's cache (1 s + 0.5 s).

    python3 prometheus_lag.py PORT CLUSTER ROUNDS [SCRAPE.json]

Starts Debian's Prometheus (/usr/bin/prometheus) on loopback with its own config and
storage, and stops it by its pid. Each round deletes one worker of CLUSTER
(BatchDeleteClusterNodes), polls ListClusterNodes and Prometheus every 20 ms, and times
from the first answer without the node Running to the first query with one fewer. Prints
a line for people and, as its very last line, one JSON object: scrape.py's figures from
SCRAPE.json (run.sh's run) with these under "prometheus_lag". Progress goes to stderr.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import benchlib  # noqa: E402

SCRAPE_S = 1.0
CACHE_S = 0.5


def log(msg):
    print(f"[bench metrics] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, pred, timeout, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(step)
    raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")


class Prometheus:
    def __init__(self, target_port):
        self.dir = tempfile.mkdtemp(prefix="bench-metrics-prom-")
        self.port = free_port()
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write(f"global:\n  scrape_interval: {SCRAPE_S:g}s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: endured\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{target_port}']\n")
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["/usr/bin/prometheus", f"--config.file={self.dir}/prometheus.yml",
             f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def query(self, promql):
        """The value of an instant query's only series; None when it has none."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?"
               + urllib.parse.urlencode({"query": promql}))
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                result = json.loads(r.read())["data"]["result"]
        except OSError:
            return None
        return float(result[0]["value"][1]) if len(result) == 1 else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    port, cluster, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    figures = {}
    if len(sys.argv) > 4:
        with open(sys.argv[4]) as f:
            figures = json.load(f)
    home = os.environ["ENDURE_HOME"]
    with open(os.path.join(home, "token")) as f:
        token = f.read().strip()

    def api(action, body):
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/{action}", data=json.dumps(body).encode(),
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def running_workers():
        nodes = api("ListClusterNodes", {"ClusterName": cluster})["ClusterNodeSummaries"]
        return {n["NodeName"]: n["InstanceId"] for n in nodes
                if n["InstanceGroupName"] == "worker"
                and n["InstanceStatus"]["Status"] == "Running"}

    running = (f'endure_nodes{{cluster="{cluster}",group="worker",status="Running"}}')
    prom = Prometheus(port)
    lags = []
    try:
        wait_for("Prometheus to answer", lambda: prom.query("up") is not None, 30, 0.2)
        workers = running_workers()
        if len(workers) < rounds:
            raise RuntimeError(f"{len(workers)} Running workers for {rounds} rounds")
        wait_for(f"Prometheus to see {len(workers)} Running workers",
                 lambda: prom.query(running) == len(workers), 30, 0.2)
        for name in sorted(workers)[:rounds]:
            before = len(running_workers())
            api("BatchDeleteClusterNodes", {"ClusterName": cluster, "NodeIds": [workers[name]]})
            wait_for(f"{name} to leave Running in the API",
                     lambda: name not in running_workers(), 60)
            t_api = time.monotonic()
            wait_for(f"Prometheus to see {name} leave Running",
                     lambda: prom.query(running) == before - 1, 30)
            lags.append(time.monotonic() - t_api)
            log(f"{name} out of Running: Prometheus saw it {lags[-1]:.2f} s after the API")
    finally:
        prom.stop()
    reference = SCRAPE_S + CACHE_S
    median = statistics.median(lags)
    print(f"node out of Running, API to Prometheus (scraping every {SCRAPE_S:g} s): median "
          f"{median:.2f} s, max {max(lags):.2f} s over {len(lags)}; {median / reference:.2f}x "
          f"one scrape interval + the collector's {CACHE_S:g} s cache")
    figures["prometheus_lag"] = {
        "rounds": len(lags), "lag_s": lags, "median_s": median, "max_s": max(lags),
        "reference_s": reference,
        "reference": "one scrape interval (1 s) + the collector's cache (0.5 s)",
        "median_over_reference": median / reference}
    benchlib.print_result(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
