"""A PyTorch job's training metrics to endured, as endure-train's rank 0 sends its own.

endure.report() queues one line and returns; a thread of its own posts the lines to
endured's ReportTrainingMetrics with the node's job credential (the auto-resume config file
endured writes on every node: Endpoint, ClusterName, Token and, for https, CaFile), so the
job shows in the console's training view, `endure get-training-metrics` and Prometheus as
endure-train does. Only rank 0's lines are sent; on other ranks, and outside a Slurm job on
an endure node, report() does nothing and returns False. While endured is away lines are
held (the newest 20000) and sent when it is back; at exit the thread gets up to 3 s to send
what is left.

A line's kind is endure-train's: with "loss" it is a step (sent in batches, once a second);
else a start, checkpoint, eval, done or stopped line by its first key, sent at once.
"""

import atexit
import collections
import json
import math
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request

__all__ = ["report", "Reporter"]

CONFIG_PATH = "/opt/endure/config/auto_resume.json"  # node::kAutoResumeConfigPath
PATH = "/v1/ReportTrainingMetrics"  # api::kPathPrefix + api::kReportTrainingMetrics
MAX_RECORDS = 1000  # api::kMaxTrainingRecords: a call's Records at most
MAX_QUEUED = 20000  # about 6 hours of 1 s steps while endured is away
INTERVAL_S = 1.0
FINAL_FLUSH_S = 3.0
TIMEOUT_S = 5.0


def _jsonable(key, value):
    """value as JSON takes it: a 0-d tensor or numpy scalar by its item(); finite floats."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; the console shows a gap
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise ValueError("report: %s: a %s cannot be sent (numbers, strings, bools, lists and "
                         "dicts of them)" % (key, type(value).__name__)) from None
    return value


class Reporter:
    """Sends lines to endured on a daemon thread. endpoint is "http://HOST:PORT" or
    "https://HOST:PORT" (then ca_file, endured's CA, is required); token the node's job
    credential; resume this try's ENDURE_AUTO_RESUME_COUNT, added to every line with its
    time (seconds since the epoch)."""

    def __init__(self, endpoint, cluster_name, token, job_id, resume=0, ca_file=None):
        endpoint = endpoint.rstrip("/\n")
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError("Endpoint: %r must be http://HOST:PORT or https://HOST:PORT"
                             % endpoint)
        self._context = None
        if endpoint.startswith("https://"):
            if not ca_file:
                raise ValueError("CaFile: an https Endpoint needs endured's CA file")
            self._context = ssl.create_default_context(cafile=ca_file)
        self._url = endpoint + PATH
        self._token = token
        self._cluster = cluster_name
        self._job = int(job_id)
        self._resume = int(resume)
        self._lock = threading.Condition()
        self._queue = collections.deque(maxlen=MAX_QUEUED)
        self._urgent = False
        self._stopping = False
        self._flush_s = FINAL_FLUSH_S
        self.sent = 0  # lines endured accepted
        self.dropped = 0  # lines endured refused (a 4xx reply)
        self._thread = threading.Thread(target=self._run, name="endure-report", daemon=True)
        self._thread.start()

    def add(self, line):
        """Queues a line (a dict of JSON values); never blocks on endured."""
        line = dict(line, time=time.time(), resume=self._resume)
        with self._lock:
            self._queue.append(line)
            if "loss" not in line:
                self._urgent = True
                self._lock.notify()

    def close(self, timeout=FINAL_FLUSH_S):
        """Sends what is queued, waiting at most `timeout` seconds, and stops the thread."""
        with self._lock:
            self._stopping = True
            self._flush_s = timeout
            self._lock.notify()
        self._thread.join(timeout + TIMEOUT_S)

    def _post(self, records):
        """True when endured took the records, or refused them for good (4xx)."""
        body = json.dumps({"ClusterName": self._cluster, "JobId": self._job,
                           "Records": records}).encode("utf-8")
        request = urllib.request.Request(self._url, data=body, method="POST", headers={
            "Authorization": "Bearer " + self._token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=self._context) as r:
                r.read()
            self.sent += len(records)
            return True
        except urllib.error.HTTPError as e:
            if 400 <= e.code < 500:  # retrying cannot help: say so once per batch, drop it
                self.dropped += len(records)
                print("endure.report: endured refused %d lines: %s" % (
                    len(records), e.read()[:200].decode("utf-8", "replace")), file=sys.stderr)
                return True
            return False
        except (OSError, ValueError):
            return False

    def _run(self):
        pending = collections.deque(maxlen=MAX_QUEUED)  # taken from the queue, not yet sent
        deadline = None
        while True:
            with self._lock:
                if not (self._urgent or self._stopping):
                    self._lock.wait(INTERVAL_S)
                self._urgent = False
                stopping = self._stopping
                pending.extend(self._queue)
                self._queue.clear()
            if stopping and deadline is None:
                deadline = time.monotonic() + self._flush_s
            while pending:
                batch = [pending[i] for i in range(min(len(pending), MAX_RECORDS))]
                if not self._post(batch):
                    break
                for _ in batch:
                    pending.popleft()
            if stopping and (not pending or time.monotonic() > deadline):
                return
            if pending:  # endured away: try again in a while (sooner while closing)
                time.sleep(0.1 if stopping else INTERVAL_S)


_reporter = None
_reporter_made = False
_reporter_lock = threading.Lock()


def _from_environment():
    """The job's reporter, or None when this is not rank 0 of a Slurm job on an endure node."""
    env = os.environ
    if env.get("SLURM_PROCID", env.get("RANK", "0")) != "0":
        return None
    try:
        job = int(env.get("SLURM_JOB_ID", "0"))
    except ValueError:
        return None
    if job <= 0:
        return None
    path = env.get("ENDURE_AUTO_RESUME_CONFIG") or CONFIG_PATH
    try:
        with open(path) as f:
            config = json.load(f)
        reporter = Reporter(config["Endpoint"], config["ClusterName"], config["Token"], job,
                            int(env.get("ENDURE_AUTO_RESUME_COUNT") or 0), config.get("CaFile"))
    except (OSError, ValueError, KeyError, TypeError, ssl.SSLError):
        return None
    atexit.register(reporter.close)
    return reporter


def reporter():
    """The process's Reporter, made on first use from the environment (None: not rank 0 of
    a Slurm job on an endure node)."""
    global _reporter, _reporter_made
    with _reporter_lock:
        if not _reporter_made:
            _reporter = _from_environment()
            _reporter_made = True
        return _reporter


_last = {}  # "since": the time of the last step line (or first report), for tokens_per_s


def report(step=None, loss=None, tokens=None, **more):
    """Reports one line of this job's training to endured; returns at once.

    step    the optimizer steps done (int)
    loss    the step's loss (a float, or a 0-d tensor: its item())
    tokens  the tokens this step trained on, over every rank; with a step and no
            tokens_per_s of its own, the line gets tokens_per_s = tokens / the seconds since
            the last step line (for the first, since the first report)
    more    any other JSON values, under the names endure-train uses where they mean the
            same: lr, grad_norm, step_ms, tokens_per_s, mfu; a start line has start=True,
            a checkpoint line checkpoint=STEP (and stall_ms), the last line done=True with
            final_step=STEP

    Returns True when the line is queued for endured, False when this process does not
    report (not rank 0 of a Slurm job on an endure node). Raises ValueError naming a key
    whose value JSON cannot hold; nothing is queued then.
    """
    line = {}
    for key, value in (("step", step), ("loss", loss), ("tokens", tokens)):
        if value is not None:
            line[key] = _jsonable(key, value)
    for key, value in more.items():
        line[key] = _jsonable(key, value)
    now = time.monotonic()
    since = _last.setdefault("since", now)
    if "loss" in line:
        if tokens is not None and "tokens_per_s" not in line and now > since:
            line["tokens_per_s"] = line["tokens"] / (now - since)
        _last["since"] = now
    r = reporter()
    if r is None:
        return False
    r.add(line)
    return True
