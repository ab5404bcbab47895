#!/usr/bin/python3
"""The web console, driven in headless Chromium at 1280x800 through selenium.

Starts its own endured, creates a small local cluster (tests/browser/cluster.json), and:
a wrong token sees no data (the API answers 401, the console stays on its login form);
the operator token logs in; every node is listed; Replace on a worker, confirmed, takes
the node through its states to a new instance, and the replacement's event shows in the
timeline; training metrics reported the way endure-train reports them draw their curves.
Every page is screenshotted into the artifact folder, and none may show an error, a blank
panel or a horizontal scrollbar. Deletes the cluster and stops endured, also on failure.

Exits 77 (ctest's SKIP_RETURN_CODE) only when selenium, Chromium or chromedriver is not
installed, and never under CI (CI=true), where scripts/setup.sh has installed them: there,
as everywhere for a browser that is installed but does not start, it fails.

    sudo flock /tmp/endure-cluster.lock tests/browser/console_test.py [--build build]
"""
import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from console_harness import (ROOT, Console, Endured, Failure, in_ci, log,  # noqa: E402
                             missing_browser, node_rows, start_browser, wait_for)

SKIP = 77
SPEC = Path(__file__).resolve().parent / "cluster.json"
CLUSTER = json.loads(SPEC.read_text())["ClusterName"]
# A training job id no Slurm job of the test cluster will have.
TRAINING_JOB = 4242


def report_training(endured):
    """Training lines for one job as endure-train's rank 0 reports them: a first try, a
    fault, a resume from the step-40 checkpoint. A Failure when endured refuses them."""
    t0 = time.time() - 400

    def step(n, resume, t):
        loss = 4.2 * (0.985 ** n) + 1.1 + 0.04 * ((n * 7919) % 13) / 13
        return {"step": n, "loss": round(loss, 4), "resume": resume, "time": t,
                "tokens_per_s": 41000 + 1500 * ((n * 31) % 7) / 7 - (6000 if n < 4 else 0),
                "mfu": 0.38 + 0.01 * ((n * 13) % 5) / 5}

    records = [{"start": True, "resume": 0, "time": t0}]
    tries = [(0, range(1, 51), t0), (1, range(41, 101), t0 + 150)]
    for resume, steps, start in tries:
        if resume:
            records.append({"start": True, "resume": resume, "resumed_from": steps[0] - 1,
                            "auto_resume_reason": "worker-2 lost: Replace", "time": start})
        for n in steps:
            t = start + 2 * (n - steps[0] + 1)
            records.append(step(n, resume, t))
            if n % 20 == 0:
                records.append({"checkpoint": n, "stall_ms": 35 + n % 7, "resume": resume,
                                "time": t + 0.5})
            if n % 25 == 0:
                records.append({"eval": True, "step": n, "resume": resume, "time": t + 0.7,
                                "val_loss": round(step(n, resume, t)["loss"] + 0.08, 4)})
    status, reply = endured.api("ReportTrainingMetrics", {
        "ClusterName": CLUSTER, "JobId": TRAINING_JOB, "Records": records})
    if status != 200:
        raise Failure(f"ReportTrainingMetrics with the operator token: HTTP {status} {reply}")
    if reply.get("Accepted") != len(records):
        raise Failure(f"ReportTrainingMetrics took {reply.get('Accepted')} of {len(records)} "
                      f"records: {reply}")
    log(f"reported {reply.get('Accepted')} training records for job {TRAINING_JOB}")


def run(console, endured):
    from selenium.webdriver.common.by import By

    # A wrong token: the API answers 401 and tells nothing.
    status, reply = endured.api("ListClusterNodes", {"ClusterName": CLUSTER}, token="wrong")
    if status != 401 or "ClusterNodeSummaries" in reply:
        raise Failure(f"ListClusterNodes with a wrong token: HTTP {status} {reply}")
    nodes = endured.ok("ListClusterNodes", {"ClusterName": CLUSTER})["ClusterNodeSummaries"]
    names = sorted(n["NodeName"] for n in nodes)
    log(f"nodes: {names}")

    # The console with a wrong token stays on its login form and shows no data.
    console.go("#/cluster/" + CLUSTER)
    console.one("#token").send_keys("not-the-token")
    console.one("#login-button").click()
    wait_for("the refusal", lambda: "refused" in console.one("#login-message").text)
    shown = console.text()
    leaked = [n for n in names + [CLUSTER] if n in shown]
    if leaked:
        raise Failure(f"a wrong token sees {leaked}")
    if console.d.execute_script("return sessionStorage.getItem('endure.token')"):
        raise Failure("a refused token was kept")
    console.check_page("01-login-refused", errors_allowed=True)

    # A token that endured stops accepting (a stale session) sends the user back to log in.
    console.d.execute_script("sessionStorage.setItem('endure.token', 'stale-token')")
    console.go("#/clusters")
    wait_for("the login form after a 401",
             lambda: "log in again" in console.one("#login-message").text)
    if any(n in console.text() for n in names + [CLUSTER]):
        raise Failure("a stale token sees data")

    # The operator token.
    console.one("#token").send_keys(endured.token)
    console.one("#login-button").click()
    console.loaded("clusters-view")
    console.one(f'tr[data-cluster="{CLUSTER}"]')
    console.check_page("02-clusters")

    # The cluster: every node listed, Running.
    console.one(f'tr[data-cluster="{CLUSTER}"] a').click()
    console.loaded("cluster-view")

    def all_listed():
        rows = {r[0]: r for n in names for r in node_rows(console, n)}
        return len(rows) == len(nodes) and all(r[1] == "Running" for r in rows.values())
    wait_for("every node listed, Running", all_listed, timeout=60)
    # The heartbeat ages have come in (the agents beat every few seconds).
    wait_for("heartbeat ages", lambda: "none yet" not in console.one("#nodes").text, 30)
    console.check_page("03-cluster")
    # The spec's memory tier (cluster.json) shows in the summary as DescribeCluster echoes it.
    cards = console.one("#cluster-view .cards").text
    if "tiered storage\nenable\n10 % of each node's memory" not in cards.lower():
        raise Failure(f"the summary does not show TieredStorageConfig Enable, 10 %: {cards!r}")

    # The Slurm controller node cannot be replaced: its button says so instead of asking.
    controller = next(n["NodeName"] for n in nodes if n["InstanceGroupName"] == "controller")
    button = console.one(f'#nodes tr[data-node="{controller}"] button[data-action="replace"]')
    if button.is_enabled():
        raise Failure(f"Replace is offered on the Slurm controller node {controller}")

    worker = [n for n in names if n.startswith("worker")][-1]
    before = endured.ok("ListClusterEvents", {"ClusterName": CLUSTER, "MaxResults": 10000})
    last_event = max([e["EventId"] for e in before["Events"]], default=0)

    # A cancelled confirmation does nothing.
    console.one(f'#nodes tr[data-node="{worker}"] button[data-action="reboot"]').click()
    console.one("dialog#confirm")
    console.one("#confirm-cancel").click()
    wait_for("the dialog to close",
             lambda: not console.d.execute_script("return document.getElementById('confirm').open"))
    time.sleep(1)
    after = endured.ok("ListClusterEvents", {"ClusterName": CLUSTER, "AfterEventId": last_event})
    if any(e.get("NodeName") == worker and "Recovery" in e["EventType"] for e in after["Events"]):
        raise Failure(f"a cancelled Reboot of {worker} was carried out: {after['Events']}")

    # Replace a worker, confirmed in the dialog.
    old_instance = node_rows(console, worker)[0][0]
    console.one(f'#nodes tr[data-node="{worker}"] button[data-action="replace"]').click()
    dialog = console.one("dialog#confirm")
    if "Replace " + worker not in dialog.text:
        raise Failure(f"the confirmation dialog reads {dialog.text!r}")
    console.check_page("04-confirm-replace")
    console.one("#confirm-ok").click()
    log(f"replace {worker} ({old_instance}) confirmed")
    answer = wait_for("endured's answer", lambda: console.one("#flash").text, 20)
    if "started" not in answer:
        raise Failure(f"Replace {worker}: the console says {answer!r}")

    seen = []
    shot_taken = False

    def replaced():
        nonlocal shot_taken
        rows = node_rows(console, worker)
        for row in rows:
            state = (("old" if row[0] == old_instance else "new"), row[1], row[2])
            if not seen or seen[-1] != state:
                seen.append(state)
                log(f"  {worker}: {state[0]} instance, {state[1]}, recovery {state[2]}")
        if not shot_taken and any(s[1] != "Running" or s[2] != "—" for s in seen):
            shot_taken = True
            console.check_page("05-cluster-replacing")
        return any(r[0] != old_instance and r[1] == "Running" and r[2] == "—" for r in rows)
    wait_for(f"{worker} replaced and Running", replaced, timeout=300, interval=0.25)
    passed = {s for s in seen if s[1] != "Running" or s[2] != "—"}
    if not passed:
        raise Failure(f"{worker} never showed a state between Running and Running: {seen}")
    console.check_page("06-cluster-replaced")

    # The replacement's events in the timeline, filtered to the worker.
    console.one('.tabs a[href$="/events"]').click()
    console.loaded("events-view")
    from selenium.webdriver.support.ui import Select
    Select(console.one("#filter-node")).select_by_value(worker)

    def replace_event():
        for row in console.by_css("#events tbody tr[data-event-id]"):
            if (int(row.get_attribute("data-event-id")) > last_event
                    and row.get_attribute("data-node") == worker
                    and "replac" in row.text.lower()):
                return row.get_attribute("data-type")
        return None
    event_type = wait_for("the replacement's event in the timeline", replace_event, 30)
    log(f"event {event_type} for {worker} in the timeline")
    # The replacement's whole course, oldest first, as the timeline shows it.
    wanted = ("NodeRecoveryRequested", "NodeReplacing", "InstanceLaunching",
              "NodeReturnedToService")

    def course():  # read in one script: the table may be redrawn meanwhile
        return console.d.execute_script("""
          return [...document.querySelectorAll('#events tbody tr[data-event-id]')]
            .filter((r) => Number(r.dataset.eventId) > arguments[0])
            .map((r) => r.dataset.type).reverse();""", last_event)
    try:
        wait_for(f"{', '.join(wanted)} in the timeline",
                 lambda: all(w in course() for w in wanted), 30)
    finally:
        log(f"{worker}'s course in the timeline: {' -> '.join(course())}")
    if any(r.get_attribute("data-node") != worker
           for r in console.by_css("#events tbody tr[data-event-id]")):
        raise Failure("the node filter shows another node's events")
    console.check_page("07-events-filtered")
    Select(console.one("#filter-node")).select_by_value("")
    console.one("#filter-text").send_keys("no event holds this text")
    wait_for("the text filter", lambda: "No event matches" in console.one("#events").text)
    console.one("#filter-clear").click()
    wait_for("every event back", lambda: len(console.by_css("#events tr[data-event-id]")) > 5)
    console.check_page("08-events")

    # The worker's page: details of the new instance, its lifecycle and its script output.
    console.go(f"#/cluster/{CLUSTER}/node/{worker}")
    console.loaded("node-view")
    wait_for("the lifecycle script's output",
             lambda: len(console.one("#node-log").text.strip()) > 20
             and "(no output yet)" not in console.one("#node-log").text, 60)
    if old_instance in console.one(".facts").text.split("Replaces")[0]:
        raise Failure("the node page shows the old instance")
    console.check_page("09-node")

    # A deep health check on the other worker, from its own page.
    other = [n for n in names if n.startswith("worker") and n != worker][0]
    mark = max([e["EventId"] for e in endured.ok(
        "ListClusterEvents", {"ClusterName": CLUSTER, "MaxResults": 10000})["Events"]], default=0)
    console.go(f"#/cluster/{CLUSTER}/node/{other}")
    console.loaded("node-view")
    wait_for("the Deep check button enabled", lambda: console.one(
        '#node-view button[data-action="deep"]').is_enabled(), 30)
    console.one('#node-view button[data-action="deep"]').click()
    console.one("#confirm-ok").click()
    answer = wait_for("endured's answer", lambda: "Deep" in console.one("#flash").text
                      and console.one("#flash").text, 20)
    if "started" not in answer:
        raise Failure(f"Deep check {other}: the console says {answer!r}")

    def deep_check_done():
        events = endured.ok("ListClusterEvents", {"ClusterName": CLUSTER, "NodeName": other,
                                                  "AfterEventId": mark})["Events"]
        return next((e for e in events
                     if e["EventType"] in ("DeepHealthCheckPassed", "DeepHealthCheckFailed")), None)
    ended = wait_for(f"{other}'s deep health check to end", deep_check_done, 240, 1)
    verdict = ended["EventType"]
    log(f"deep health check of {other}: {verdict}")
    # The other worker is healthy: its deep check passes (a failed one would replace it).
    if verdict != "DeepHealthCheckPassed":
        raise Failure(f"the deep health check of the healthy {other} ended {verdict}: "
                      f"{ended.get('Description', '')}")
    wait_for(f"{verdict} in {other}'s lifecycle", lambda: verdict in console.one("#node-view").text)
    console.check_page("10-node-deep-checked")

    # Jobs and training: the training run's curves.
    report_training(endured)
    console.go(f"#/cluster/{CLUSTER}/jobs")
    console.loaded("jobs-view")
    console.one(f'tr[data-job="{TRAINING_JOB}"]')
    console.check_page("11-jobs")
    console.one(f'tr[data-job="{TRAINING_JOB}"] a').click()
    console.loaded("training-view")
    for chart in ("#loss-chart", "#rate-chart"):
        console.one(chart + " svg path.line")
    if not console.by_css("#loss-chart .marker"):
        raise Failure("the resume is not marked on the loss chart")
    console.check_page("12-training")

    # Log out: back to the form, and the token is gone.
    console.one("#logout").click()
    console.one("#token")
    if console.d.execute_script("return sessionStorage.getItem('endure.token')"):
        raise Failure("logging out kept the token")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"), help="the build folder")
    parser.add_argument("--artifacts", default=os.environ.get("ENDURE_ARTIFACTS", ""),
                        help="where the screenshots go (default $ENDURE_ARTIFACTS/console or "
                             "<build>/test-artifacts/console)")
    args = parser.parse_args()
    build = Path(args.build).resolve()
    artifacts = (Path(args.artifacts) / "console" if args.artifacts
                 else build / "test-artifacts" / "console")
    artifacts.mkdir(parents=True, exist_ok=True)
    for old in [*artifacts.glob("*.png"), artifacts / "endured.log"]:  # a past run's
        old.unlink(missing_ok=True)
    if os.geteuid() != 0:
        print("console_test: needs root (endured's local nodes are Linux namespaces)")
        return 1

    missing = missing_browser()
    if missing and in_ci():
        print(f"FAIL: {missing}, and CI is set: scripts/setup.sh installs it")
        return 1
    if missing:
        print(f"SKIP: {missing} (scripts/setup.sh installs it), so the console is not tested")
        return SKIP
    try:
        driver = start_browser()
    except Exception as e:  # installed, and does not start: a broken browser or driver
        print(f"FAIL: Chromium is installed but does not start: "
              f"{type(e).__name__}: {str(e).strip()[:500]}")
        return 1

    endured = Endured(build)
    failed = True
    try:
        endured.start()
        log(f"creating cluster {CLUSTER} from {SPEC.relative_to(ROOT)}")
        endured.cli("create-cluster", "--cli-input-json", f"file://{SPEC}", "--wait")
        run(Console(driver, endured, artifacts), endured)
        failed = False
    except Failure as e:
        print(f"FAIL: {e}")
    except Exception as e:
        print(f"FAIL: {type(e).__name__}: {e}")
    finally:
        if failed:
            try:
                driver.save_screenshot(str(artifacts / "failure.png"))
                log(f"the page at the failure: {artifacts / 'failure.png'} ({driver.current_url})")
            except Exception:
                pass
        driver.quit()
        deleted = False
        try:
            if endured.proc and endured.proc.poll() is None:
                endured.cli("delete-cluster", "--cluster-name", CLUSTER, "--wait", timeout=300)
                deleted = True
        except Exception as e:  # a create that failed early has nothing to delete
            print(f"console_test: delete-cluster: {e}")
        endured.stop()
        if failed and endured.log_path.exists():
            shutil.copy(endured.log_path, artifacts / "endured.log")
            log(f"endured's log: {artifacts / 'endured.log'}")
        # Only a home whose cluster is gone: a node left behind still has mounts in it.
        if deleted or endured.proc is None:
            shutil.rmtree(endured.home, ignore_errors=True)
    if failed:
        return 1
    print(f"PASS: console pages screenshotted in {artifacts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
