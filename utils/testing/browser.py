"""A real headless browser for tests: Debian's `chromium`, driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: JSON messages ending in NUL on file descriptors 3 and 4), so nothing but the
standard library is needed and no port is opened.

    with Browser.start() as browser:          # one browser process; pages are cheap
        page = browser.open(path, width=1280, height=900)
        page.evaluate("document.images.length")
        page.screenshot(out_png)

`find_chromium()` returns None where no browser is installed (`scripts/setup_browser.sh` installs one with
apt-get, as root); tests skip with that reason.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = "scripts/setup_browser.sh installs Debian's chromium and fonts-nanum (needs apt-get and root)"


class BrowserError(RuntimeError):
    """The browser did not start, answered with an error, or did not answer in time."""


def browser_required() -> bool:
    """Whether a missing chromium must fail the browser test rather than skip it: $LMMS_TASKS_REQUIRE_BROWSER=1,
    which scripts/test.sh sets where scripts/setup_browser.sh can install chromium (apt-get and root)."""
    return os.environ.get("LMMS_TASKS_REQUIRE_BROWSER") == "1"


def find_chromium() -> str | None:
    """The chromium executable: $LMMS_TASKS_CHROMIUM, else the first of CANDIDATES on PATH."""
    configured = os.environ.get("LMMS_TASKS_CHROMIUM")
    if configured:
        return configured if shutil.which(configured) else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _above_4(fd: int) -> int:
    """`fd`, moved above 4 if it is 3 or 4 (where the shell is about to put the pipe ends)."""
    if fd > 4:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless chromium process, driven over the DevTools pipe."""

    def __init__(self, executable: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="lmms_tasks_chromium_")
        self._stderr = open(Path(self._profile) / "stderr.log", "wb")  # noqa: SIM115 - closed in close()
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        to_browser_r, from_browser_w = _above_4(to_browser_r), _above_4(from_browser_w)
        args = [
            executable,
            "--headless",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--hide-scrollbars",
            "--mute-audio",
            "--force-color-profile=srgb",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--no-sandbox")  # chromium refuses to run its sandbox as root (containers, CI)
        args.append("about:blank")
        # chromium reads commands on fd 3 and answers on fd 4: a small Python trampoline moves the pipe ends
        # there and execs the browser (no preexec_fn, which is unsafe in a process with threads, such as a
        # test run with a stand-in server; no shell, whose fd syntax varies)
        trampoline = (
            "import os, sys\n"
            f"os.dup2({to_browser_r}, 3); os.dup2({from_browser_w}, 4); os.close({to_browser_r}); os.close({from_browser_w})\n"
            "os.execv(sys.argv[1], sys.argv[1:])\n"
        )
        self._process = subprocess.Popen(
            [sys.executable, "-c", trampoline, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            pass_fds=(to_browser_r, from_browser_w),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.version = self.call("Browser.getVersion")["product"]

    @classmethod
    def start(cls, executable: str | None = None, timeout: float = 60.0) -> Browser:
        found = executable or find_chromium()
        if not found:
            raise BrowserError(f"no chromium found ({', '.join(CANDIDATES)}); {INSTALL_HINT}")
        return cls(found, timeout)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _stderr_tail(self) -> str:
        try:
            return (Path(self._profile) / "stderr.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one DevTools command and return its result (events in between are dropped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                    raise BrowserError(f"{method}: no answer within {self.timeout:.0f} s; browser stderr: {self._stderr_tail()}")
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise BrowserError(f"{method}: the browser closed the pipe; stderr: {self._stderr_tail()}")
                self._buffer += chunk
            raw, _, self._buffer = self._buffer.partition(b"\0")
            answer = json.loads(raw)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def open(self, path_or_url: str | Path, width: int = 1280, height: int = 900) -> Page:
        """A new tab of `width` x `height` CSS pixels showing the file or URL, once it has loaded."""
        url = str(path_or_url)
        if "://" not in url:
            url = Path(url).resolve().as_uri()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session, width, height)
        self.call(
            "Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session
        )
        self.call("Page.navigate", {"url": url}, session)
        deadline = time.monotonic() + self.timeout
        while page.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise BrowserError(f"{url}: not loaded within {self.timeout:.0f} s")
            time.sleep(0.05)
        # images decode asynchronously: wait until every <img> has finished (loaded or failed)
        page.evaluate("Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null)))", await_promise=True)
        return page

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self.call("Browser.close")
            except (BrowserError, OSError):
                pass
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Browser, target: str, session: str, width: int, height: int) -> None:
        self.browser, self.target, self.session, self.width, self.height = browser, target, session, width, height

    def evaluate(self, expression: str, await_promise: bool = False) -> Any:
        """The JSON value of a JavaScript expression in the page."""
        result = self.browser.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": await_promise}, self.session
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails'].get('text')} {result['exceptionDetails'].get('exception', {})}")
        return result["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        """A PNG of the page (the whole page, not only the viewport, by default)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.browser.call("Page.getLayoutMetrics", {}, self.session)["cssContentSize"]
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.browser.call("Page.captureScreenshot", params, self.session)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def platform_fonts(self, selector: str) -> list[tuple[str, list[dict[str, Any]]]]:
        """(text, the fonts the browser drew it with: familyName and glyphCount each) for every element
        matching the CSS selector. A character no font has is counted under the first font (as a box)."""
        self.browser.call("DOM.enable", {}, self.session)
        self.browser.call("CSS.enable", {}, self.session)
        root = self.browser.call("DOM.getDocument", {}, self.session)["root"]["nodeId"]
        nodes = self.browser.call("DOM.querySelectorAll", {"nodeId": root, "selector": selector}, self.session)["nodeIds"]
        texts = self.evaluate(f"Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => e.textContent)")
        return [
            (text, self.browser.call("CSS.getPlatformFontsForNode", {"nodeId": node}, self.session)["fonts"])
            for node, text in zip(nodes, texts)
        ]

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})


__all__ = ["Browser", "BrowserError", "INSTALL_HINT", "Page", "browser_required", "find_chromium"]
