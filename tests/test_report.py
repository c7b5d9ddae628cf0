"""``--report``: the HTML files of simulate, replay and sweep, opened in a real headless Chromium
(Debian's, installed by .ci/run) through Playwright: every plot renders, no script error, and the
page asks the network for nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from browser import launch, needs_chromium
from gpu_trace import write_nodes, write_pods

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extras have it)")
pytestmark = needs_chromium
KUBESCHED = [sys.executable, "-m", "kubesched"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def browser():
    yield from launch()


def render(browser, path: Path) -> tuple[int, list[dict], list[str], list[str]]:
    """Open the report; return the declared plot count, each plot's state, errors and requests."""
    page = browser.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
    page.goto(path.resolve().as_uri())
    page.wait_for_function("window.kubeschedPlots !== undefined", timeout=30_000)
    declared = page.evaluate("window.kubeschedPlots")
    plots = page.evaluate(
        """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => ({
            id: d.id,
            traces: (d._fullData || []).length,
            svg: d.querySelectorAll('.main-svg').length,
            title: d.closest('section').querySelector('h2').textContent
        }))"""
    )
    page.close()
    return declared, plots, errors, requests


def check(browser, path: Path, minimum: int) -> list[dict]:
    declared, plots, errors, requests = render(browser, path)
    assert errors == []
    assert requests == []  # self-contained: plotly.js is inline
    assert declared == len(plots) >= minimum
    for p in plots:
        assert p["traces"] >= 1 and p["svg"] >= 1, p
    return plots


def kubesched(*args: str) -> None:
    r = subprocess.run([*KUBESCHED, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_simulate_report_renders(browser, tmp_path):
    out = tmp_path / "simulate.html"
    kubesched("simulate", str(ROOT / "examples" / "preemption"), "--summary", "--report", str(out))
    plots = check(browser, out, 5)
    assert any("Preemptions" in p["title"] for p in plots)


def test_replay_report_renders(browser, tmp_path):
    pytest.importorskip("kubesched_gpushare", reason="the plugins/gpushare package is not installed")
    nodes, pods = write_nodes(tmp_path / "n.csv"), write_pods(tmp_path / "p.csv", n=150)
    for mode in ("arrivals", "timed"):
        out = tmp_path / f"replay-{mode}.html"
        kubesched("replay", str(pods), "--cluster", str(nodes), "--mode", mode, "--policy", "FGD", "--report", str(out))
        plots = check(browser, out, 8)
        titles = [p["title"] for p in plots]
        assert "GPU allocation and fragmentation" in titles
        assert any(t.startswith("Per-node GPU use") for t in titles)


def test_sweep_report_renders(browser, tmp_path):
    pytest.importorskip("kubesched_gpushare", reason="the plugins/gpushare package is not installed")
    nodes, pods = write_nodes(tmp_path / "n.csv"), write_pods(tmp_path / "p.csv", n=150)
    out = tmp_path / "sweep.html"
    kubesched(
        "sweep", str(pods), "--cluster", str(nodes), "--policies", "Random,FGD", "--seeds", "2", "-j", "2",
        "--report", str(out),
    )  # fmt: skip
    plots = check(browser, out, 3)
    curves = next(p for p in plots if p["title"].startswith("GPU allocated %"))
    assert curves["traces"] == 4  # a mean line and a seed band per policy
