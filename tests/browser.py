"""A real headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``, as
Playwright and Puppeteer drive it): no driver binary and no Python package beyond the standard library.

    with Browser() as b:
        page = b.open("file:///.../index.html")
        page.eval("document.title")
        page.errors            # console errors and uncaught exceptions, as the page logged them
        page.screenshot(path)
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium() -> str | None:
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


def browser_or_skip() -> None:
    """Skip the calling test without Chromium, unless SGG_EVAL_BROWSER_REQUIRED=1 (CI sets it): then fail."""
    import pytest

    if chromium() is None:
        if os.environ.get("SGG_EVAL_BROWSER_REQUIRED") == "1":
            pytest.fail("no Chromium on PATH, and SGG_EVAL_BROWSER_REQUIRED=1")
        pytest.skip("no Chromium on PATH (apt install chromium); CI installs it")


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session, self.errors = browser, session, []

    def send(self, method: str, **params):
        return self.browser.send(method, params, session=self.session)

    def eval(self, expression: str):
        """The value of a JavaScript expression (awaited if a promise); an exception is raised here."""
        out = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in out:
            raise AssertionError(f"{expression!r}: {out['exceptionDetails']}")
        return out["result"].get("value")

    def goto(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait_until("document.readyState === 'complete' && location.href === " + json.dumps(url))

    def wait_until(self, condition: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.eval(f"!!({condition})"):
                    return
            except AssertionError:
                pass  # the page is between documents
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {condition}")

    def screenshot(self, path: str, width: int = 1200, height: int = 900) -> None:
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        data = self.send("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))


class Browser:
    def __init__(self, executable: str | None = None):
        self.executable = executable or chromium()
        self.next_id, self.pages, self.buffer = 0, {}, b""

    def __enter__(self) -> Browser:
        self.profile = tempfile.mkdtemp(prefix="sgg-eval-chromium-")
        to_browser, from_browser = os.pipe(), os.pipe()
        # the browser reads commands on fd 3 and writes replies on fd 4
        fds = {3: to_browser[0], 4: from_browser[1]}

        def child_fds():
            # through fresh copies: a pipe end may already be fd 3 or 4 (and os.pipe's ends close on exec)
            copies = {target: os.dup(fd) for target, fd in fds.items()}
            for target, fd in copies.items():
                os.dup2(fd, target)

        self.proc = subprocess.Popen(
            [
                self.executable,
                "--headless=new",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,
            close_fds=False,
        )
        os.close(to_browser[0]), os.close(from_browser[1])
        self.write, self.read = to_browser[1], from_browser[0]
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close", {})
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.write), os.close(self.read)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _message(self) -> dict:
        while b"\0" not in self.buffer:
            chunk = os.read(self.read, 1 << 16)
            if not chunk:
                raise AssertionError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict, session: str | None = None) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.write, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._event(reply)

    def _event(self, event: dict) -> None:
        page = self.pages.get(event.get("sessionId"))
        if page is None:
            return
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            page.errors.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            page.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            page.errors.append(params["entry"].get("text", "error"))

    def open(self, url: str) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = self.pages[session] = Page(self, session)
        for domain in ("Runtime", "Log", "Page"):
            page.send(f"{domain}.enable")
        page.goto(url)
        return page
