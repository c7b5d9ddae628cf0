"""A newcomer's path, from a fresh clone: the README's tour in order, each output checked (the blocks
it runs, then the live cluster it only shows: `kubesched up examples/basic`, kubectl, `kubesched
explain`, the web UI in Chromium), ending at a sizing answer, a replay and the live UI."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from browser import launch, needs_chromium
from docs_blocks import ROOT, blocks, environment, matches, run
from live import UPSTREAM_KUBECTL, free_port, wait_for

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extras have it)")
pytestmark = needs_chromium


@pytest.fixture(scope="module")
def browser():
    yield from launch()


def fresh_clone(tmp: Path) -> Path:
    """What a newcomer gets from ``git clone``: the committed tree (or, outside a checkout, the files)."""
    clone = tmp / "kubesched"
    if (ROOT / ".git").exists():
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    else:
        shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(".venv", ".cache", "__pycache__", ".git"))
    return clone


def test_from_the_readme_to_a_sizing_answer_a_replay_and_the_live_ui(browser, tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    readme = clone / "README.md"
    tour = [b for b in blocks(readme) if b.language == "console"]
    ran = []
    for block in tour:  # in the README's order, in the clone, as the newcomer types them
        for command in block.commands():
            done = run(command, clone)
            assert done.returncode == command.exit_code, f"$ {command.text}\n{done.stderr}"
            assert matches(command.expected, (done.stdout + done.stderr).splitlines()), f"$ {command.text}"
            ran.append(command.text.split()[1])
    assert {"simulate", "size", "replay"} <= set(ran)

    # the block the README shows but cannot run as a test: the live cluster, on free ports
    live = next(b for b in blocks(readme) if any(line.startswith("$ kubesched up") for line in b.lines))
    assert live.reason
    api, ui = free_port(), free_port()
    env = {**environment(), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched", "up", "examples/basic", "--port", str(api), "--ui-port", str(ui)],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline().rstrip(), proc.stdout.readline().rstrip()
        kubeconfig = clone / ".kubesched" / "kubeconfig"
        assert first == f"kubesched: API server on https://127.0.0.1:{api}; run: export KUBECONFIG={kubeconfig}"
        login = re.fullmatch(rf"kubesched: web UI on http://127\.0\.0\.1:{ui}; log in once at (\S+)", second)
        assert login, second
        env = {**env, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}

        def pods() -> str:
            got = subprocess.run(
                [str(UPSTREAM_KUBECTL), "get", "pods", "-n", "ml", "--no-headers"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            return got.stdout if "Running" in got.stdout else ""

        table = {line.split()[0]: line.split()[2] for line in wait_for(pods, timeout=60).splitlines()}
        assert table == {"batch-big": "Pending", "trainer": "Running", "trainer-2": "Pending"}

        explain = subprocess.run(
            [sys.executable, "-m", "kubesched", "explain", "ml/batch-big"],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert explain.returncode == 0, explain.stderr
        shown = next(line for line in live.lines if line.lstrip().startswith("Verdict:"))
        assert shown in explain.stdout.splitlines()

        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(login.group(1))
        page.wait_for_selector("[data-live=true]")
        assert page.locator(".node").count() == 3
        page.wait_for_selector(".pending tr[data-pod='ml/batch-big']")
        page.goto(f"http://127.0.0.1:{ui}/#/pod/ml/batch-big")
        verdict = page.wait_for_selector("[data-verdict=Verdict]").inner_text()
        assert "Verdict: " + verdict == shown.strip()
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # readable at 1280 px
        assert errors == []
        page.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
