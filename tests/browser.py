"""Debian's headless chromium driven over the DevTools protocol: load pages, press keys, read the layout.

The pages under test run no script; DevTools evaluates its probes outside the page's Content-Security-Policy, and
keys go through the browser's input pipeline as a person's would (Tab moves focus, Space checks a radio).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

KEYS = {"Tab": 9, "Enter": 13, " ": 32, "ArrowRight": 39, "ArrowDown": 40}
"""Windows virtual key codes of the keys the tests press."""


class Browser:
    """One headless chromium with one tab; always `close()` it (the process is ours)."""

    def __init__(self, profile: Path) -> None:
        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", f"--user-data-dir={profile}",
             "about:blank"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = self._devtools_port()
        page = next(t for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json() if t["type"] == "page")
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None).__enter__()   # closed in close()
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.send("Page.enable")
        self.send("Emulation.setFocusEmulationEnabled", enabled=True)   # autofocus and :focus-visible, headless

    def _devtools_port(self, timeout: float = 60.0) -> int:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if found:
                return int(found.group(1))
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError("chromium did not open its DevTools port")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message.get("result", {})
            self.events.append(message)

    def _wait_for_load(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, "the page did not load"
            self.events.append(json.loads(self.ws.recv(timeout=timeout)))
        self.events.clear()

    def open(self, url: str) -> None:
        self.events.clear()
        self.send("Page.navigate", url=url)
        self._wait_for_load()

    def press(self, key: str, loads: bool = False) -> None:
        """Press and release one key; `loads`: it submits a form or follows a link, wait for the next page."""
        self.events.clear()
        code = KEYS[key]
        text = {"Enter": "\r", " ": " "}.get(key)
        self.send("Input.dispatchKeyEvent", type="keyDown", key=key, windowsVirtualKeyCode=code,
                  **({"text": text} if text else {}))
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key, windowsVirtualKeyCode=code)
        if loads:
            self._wait_for_load()

    def wait_for(self, expression: str, timeout: float = 10.0) -> None:
        """Poll until `expression` is true in the page (autofocus, for one, may land after the load event)."""
        deadline = time.monotonic() + timeout
        while not self.eval(expression):
            assert time.monotonic() < deadline, f"never true: {expression}"
            time.sleep(0.05)

    def type(self, text: str) -> None:
        self.send("Input.insertText", text=text)

    def eval(self, expression: str) -> Any:
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def resize(self, width: int, height: int = 900) -> None:
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def overflow(self) -> int:
        """How many CSS pixels the page is wider than the window (0: no horizontal scrolling)."""
        return self.eval("document.documentElement.scrollWidth - document.documentElement.clientWidth")

    def screenshot(self, path: Path) -> None:
        """The whole page, as tall as its content, at the window's width."""
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
