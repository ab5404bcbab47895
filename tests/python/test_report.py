"""endure.report: who reports (rank 0 of a job on an endure node), what the requests carry
(ReportTrainingMetrics' ClusterName, JobId and Records, each with time and resume, the
node's token), step lines batched and other lines at once, lines held while endured is away
and sent when it is back, and values JSON cannot hold refused by name. endured is played
by a small HTTP server on loopback that checks what the real one checks
(api::ReportTrainingMetricsRequest::check); the real one is met in the integration test.
Run by CTest (python_report)."""

import http.server
import json
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import endure.metrics as metrics  # noqa: E402

WAIT_S = 30  # a bound on waiting for the reporter thread, never a figure checked


class Endured(http.server.ThreadingHTTPServer):
    """Takes ReportTrainingMetrics calls, checking them as endured does."""

    def __init__(self, port=0):
        super().__init__(("127.0.0.1", port), _Handler)
        self.calls = []
        self.lock = threading.Condition()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def stop(self):
        self.shutdown()
        self.server_close()

    def records(self):
        with self.lock:
            return [r for call in self.calls for r in call["Records"]]

    def wait_records(self, n):
        deadline = time.monotonic() + WAIT_S
        with self.lock:
            while len([r for c in self.calls for r in c["Records"]]) < n:
                if not self.lock.wait(max(0.0, deadline - time.monotonic())):
                    break
        return self.records()


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ok = (self.path == "/v1/ReportTrainingMetrics" and
              self.headers["Authorization"] == "Bearer job-token" and
              body.get("ClusterName") == "demo" and isinstance(body.get("JobId"), int) and
              isinstance(body.get("Records"), list) and 1 <= len(body["Records"]) <= 1000 and
              all(isinstance(r, dict) and isinstance(r.get("time"), (int, float))
                  for r in body["Records"]))
        self.send_response(200 if ok else 400)
        self.end_headers()
        self.wfile.write(b'{"Added": 1}' if ok else b'{"__type": "ValidationException"}')
        if ok:
            with self.server.lock:
                self.server.calls.append(body)
                self.server.lock.notify_all()


def environment(port, config_dir, rank="0"):
    path = os.path.join(config_dir, "auto_resume.json")
    with open(path, "w") as f:
        json.dump({"Endpoint": "http://127.0.0.1:%d" % port, "ClusterName": "demo",
                   "Token": "job-token", "MaxResumes": 3}, f)
    return {"SLURM_JOB_ID": "41", "SLURM_PROCID": rank, "ENDURE_AUTO_RESUME_COUNT": "2",
            "ENDURE_AUTO_RESUME_CONFIG": path}


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.config_dir = tempfile.mkdtemp(prefix="endure-py-report-")
        self.saved_env = dict(os.environ)
        self.addCleanup(self.restore)

    def restore(self):
        os.environ.clear()
        os.environ.update(self.saved_env)
        if metrics._reporter is not None:
            metrics._reporter.close(timeout=0)
        metrics._reporter, metrics._reporter_made = None, False
        metrics._last.clear()

    def use(self, env):
        os.environ.update(env)
        metrics._reporter, metrics._reporter_made = None, False

    def test_rank_0_reports_what_endure_train_reports(self):
        server = Endured()
        self.addCleanup(server.stop)
        self.use(environment(server.server_address[1], self.config_dir))
        self.assertTrue(metrics.report(start=True, world=2))
        self.assertTrue(metrics.report(step=1, loss=2.5, tokens=4096, lr=1e-3))
        self.assertTrue(metrics.report(checkpoint=1, stall_ms=0.4))
        records = server.wait_records(3)
        self.assertEqual([r.get("step") for r in records], [None, 1, None])
        start, step, ckpt = records
        self.assertEqual(server.calls[0]["JobId"], 41)
        self.assertTrue(start["start"])
        self.assertEqual((step["loss"], step["tokens"], step["lr"]), (2.5, 4096, 1e-3))
        self.assertGreater(step["tokens_per_s"], 0)
        self.assertEqual(ckpt["checkpoint"], 1)
        for r in records:
            self.assertEqual(r["resume"], 2)
            self.assertIsInstance(r["time"], float)

    def test_other_ranks_and_machines_outside_a_job_do_not_report(self):
        self.use(environment(1, self.config_dir, rank="1"))
        self.assertFalse(metrics.report(step=1, loss=1.0))
        self.restore()
        self.use({"ENDURE_AUTO_RESUME_CONFIG": os.path.join(self.config_dir, "missing.json"),
                  "SLURM_JOB_ID": "41", "SLURM_PROCID": "0"})
        self.assertFalse(metrics.report(step=1, loss=1.0))

    def test_lines_wait_while_endured_is_away(self):
        probe = Endured()
        port = probe.server_address[1]
        probe.stop()  # endured away: nothing listens on its port
        self.use(environment(port, self.config_dir))
        for step in range(1, 6):
            metrics.report(step=step, loss=1.0 / step)
        metrics.report(checkpoint=5)
        time.sleep(1.5)  # the thread tries and fails at least once; not a figure checked
        server = Endured(port)
        self.addCleanup(server.stop)
        records = server.wait_records(6)
        self.assertEqual([r.get("step") for r in records[:5]], [1, 2, 3, 4, 5])
        self.assertEqual(records[5]["checkpoint"], 5)

    def test_a_tensor_loss_is_its_item_and_an_object_is_refused_by_name(self):
        import torch
        server = Endured()
        self.addCleanup(server.stop)
        self.use(environment(server.server_address[1], self.config_dir))
        with self.assertRaisesRegex(ValueError, "report: optimizer: a object"):
            metrics.report(step=1, loss=1.0, optimizer=object())
        metrics.report(step=1, loss=torch.tensor(0.75), grad_norm=float("nan"))
        metrics.report(done=True, final_step=1)
        records = server.wait_records(2)
        self.assertEqual(len(records), 2)  # the refused line was not queued
        self.assertEqual(records[0]["loss"], 0.75)
        self.assertIsNone(records[0]["grad_norm"])


if __name__ == "__main__":
    unittest.main()
