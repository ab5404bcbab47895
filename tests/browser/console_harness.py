"""What the console's browser test drives: its own endured (started, called through the API
and the CLI, stopped by pid) and the console's pages in headless Chromium through selenium.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 1280, 800


class Failure(Exception):
    pass


def log(msg):
    print(f"[console_test {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wait_for(what, pred, timeout=30.0, interval=0.2):
    """pred()'s first truthy value within timeout; a Failure naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = pred()
            if value:
                return value
        except Exception as e:  # the page may be mid-redraw: look again
            last_error = e
        time.sleep(interval)
    raise Failure(f"timed out after {timeout:.0f} s waiting for {what}"
                  + (f" (last error: {last_error})" if last_error else ""))


def in_ci():
    """True when the variable CI is set to anything but "", "0" or "false": there the
    prerequisites are what scripts/setup.sh installs, and a missing one is a failure."""
    return os.environ.get("CI", "") not in ("", "0", "false")


def browser_paths():
    """(chromium, chromedriver): on the PATH, else where Debian's packages put them."""
    return (shutil.which("chromium") or "/usr/bin/chromium",
            shutil.which("chromedriver") or "/usr/bin/chromedriver")


def missing_browser():
    """Why the browser cannot be tried at all (selenium, Chromium or its driver not
    installed: scripts/setup.sh installs all three), or "" when they are all there."""
    try:
        import selenium  # noqa: F401
    except ImportError as e:
        return f"python3-selenium is not installed ({e})"
    for path in browser_paths():
        if not os.access(path, os.X_OK):
            return f"{path} is not installed"
    return ""


def start_browser():
    """Headless Chromium at exactly 1280x800. Raises whatever selenium raises when a browser
    that is installed does not start (a broken driver, a version mismatch)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars=false"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    # The viewport itself, not the window around it, is 1280x800.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1,
                            "mobile": False})
    return driver


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Endured:
    """endured with a home of its own, and the API and CLI that talk to it."""

    def __init__(self, build):
        self.build = build
        self.home = Path(tempfile.mkdtemp(prefix="endure-console-test-"))
        self.port = free_port()
        self.log_path = self.home / "endured.log"
        self.proc = None
        self.token = ""

    def start(self):
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                [str(self.build / "bin/endured"), "--home", str(self.home), "--port",
                 str(self.port)], stdout=out, stderr=subprocess.STDOUT)
        wait_for("endured to serve", lambda: (self.home / "endpoint").exists()
                 or self.proc.poll() is not None, timeout=20)
        if self.proc.poll() is not None:
            raise Failure("endured exited: " + self.log_path.read_text()[-2000:])
        self.token = (self.home / "token").read_text().strip()
        log(f"endured pid {self.proc.pid} serves 127.0.0.1:{self.port}, home {self.home}")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def api(self, action, body=None, token=None):
        """(HTTP status, reply) of POST /v1/<action>."""
        req = urllib.request.Request(
            f"{self.url}/v1/{action}", data=json.dumps(body or {}).encode(), method="POST",
            headers={"Authorization": "Bearer " + (self.token if token is None else token),
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return res.status, json.loads(res.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def ok(self, action, body=None):
        status, reply = self.api(action, body)
        if status != 200:
            raise Failure(f"{action}: HTTP {status}: {reply}")
        return reply

    def cli(self, *args, timeout=600):
        env = dict(os.environ, ENDURE_HOME=str(self.home))
        r = subprocess.run([str(self.build / "bin/endure"), *args], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise Failure(f"endure {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
        return r.stdout

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Console:
    """The browser on the console's pages, with the checks every page must pass."""

    def __init__(self, driver, endured, artifacts):
        self.d = driver
        self.endured = endured
        self.artifacts = artifacts
        self.base = endured.url + "/console/"
        self.shots = []

    def by_css(self, css):
        from selenium.webdriver.common.by import By
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def one(self, css, timeout=20):
        return wait_for(f"'{css}' on the page",
                        lambda: next((e for e in self.by_css(css) if e.is_displayed()), None),
                        timeout)

    def go(self, hash_path):
        self.d.get(self.base + hash_path)

    def text(self):
        return self.d.find_element("tag name", "body").text

    def loaded(self, view_id, timeout=30):
        """Waits until the view has drawn its first refresh."""
        return wait_for(f"#{view_id} to load", lambda: self.d.execute_script(
            "const v = document.getElementById(arguments[0]);"
            "return v && !v.classList.contains('loading');", view_id), timeout)

    def check_page(self, name, errors_allowed=False):
        """The page has no horizontal scrollbar, no error, no blank panel; then a screenshot."""
        state = self.d.execute_script("""
          const de = document.documentElement;
          const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
          const errors = [...document.querySelectorAll('.error, .flash.bad')]
            .filter(visible).map((e) => e.textContent.trim());
          const blank = [...document.querySelectorAll('.panel, .card')].filter(visible)
            .filter((p) => !p.textContent.trim() && !p.querySelector('svg, input, select'))
            .map((p) => p.id || p.className);
          const main = document.getElementById('view');
          return {scrollWidth: de.scrollWidth, clientWidth: de.clientWidth,
                  innerWidth: window.innerWidth, errors, blank,
                  scriptErrors: window.consoleErrors || [],
                  mainText: main ? main.innerText.trim().length : 0};
        """)
        path = self.artifacts / f"{name}.png"
        self.d.save_screenshot(str(path))
        self.shots.append(path)
        problems = []
        if state["innerWidth"] != WIDTH:
            problems.append(f"viewport is {state['innerWidth']} px wide, not {WIDTH}")
        if state["scrollWidth"] > state["clientWidth"]:
            problems.append(f"horizontal scrollbar: content {state['scrollWidth']} px wide in "
                            f"{state['clientWidth']} px")
        if state["errors"] and not errors_allowed:
            problems.append(f"errors shown: {state['errors']}")
        if state["blank"]:
            problems.append(f"blank panels: {state['blank']}")
        if state["scriptErrors"]:
            problems.append(f"script errors: {state['scriptErrors']}")
        if not state["mainText"]:
            problems.append("the page is blank")
        if problems:
            raise Failure(f"page {name} ({path}): " + "; ".join(problems))
        log(f"page {name}: ok, {path}")


def node_rows(console, node):
    """(instance, status, recovery) of every row of the nodes table for `node`."""
    return console.d.execute_script("""
      return [...document.querySelectorAll('#nodes tr[data-node="' + arguments[0] + '"]')]
        .map((r) => [r.dataset.instance, r.dataset.status,
                     r.querySelector('.recovery-cell').innerText.trim()]);
    """, node)
