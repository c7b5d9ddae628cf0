"""The README's pictures of the web UI: ``kubesched up examples/basic`` in a fresh data directory,
the cluster page and a pod's page, taken in headless Chromium (the test extras' Playwright and
Debian's chromium, as the browser tests use them).

    python scripts/ui_screenshots.py docs/images
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")
    out.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="kubesched-ui-"))
    log = data / "up.log"
    cmd = [sys.executable, "-m", "kubesched.cli", "up", "examples/basic", "--data-dir", str(data / "d")]
    cmd += ["--port", str(free_port()), "--ui-port", str(free_port())]
    proc = subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    try:
        url = None
        for _ in range(100):
            m = re.search(r"web UI on (\S+)", log.read_text())
            if m:
                url = m.group(1)
                break
            time.sleep(0.1)
        assert url, log.read_text()
        time.sleep(2)  # the example's pods scheduled
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 640})
            page.goto(url)
            page.wait_for_selector(".node .chip")
            page.screenshot(path=str(out / "ui-cluster.png"))
            page.goto(url.split("?")[0] + "#/pod/shop/web-1")
            page.wait_for_selector("table.results tr.win")
            page.screenshot(path=str(out / "ui-pod.png"), full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(15)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
