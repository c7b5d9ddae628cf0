"""``--report``: the HTML files of simulate, replay, sweep, drain and size, opened in a real headless Chromium
(Debian's, installed by .ci/run) through Playwright: every plot renders, no script error, and the
page asks the network for nothing."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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
    """Open the report at 1280 px; return the declared plot count, each plot's state, errors (a table
    wider than its section counts as one) and requests."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
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
    errors += page.evaluate(
        """() => Array.from(document.querySelectorAll('section.data .scroll'))
            .filter(d => d.scrollWidth > d.clientWidth + 1)
            .map(d => 'table wider than the page: ' + d.closest('section').id)"""
    )
    if page.evaluate("document.documentElement.scrollWidth") > 1280:
        errors.append("the page scrolls sideways at 1280 px")
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


def kubesched(*args: str, status: int = 0) -> None:
    r = subprocess.run([*KUBESCHED, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == status, r.stderr


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


# -- the planner's report: capacity per pool, zone and GPU model, placements, pending, CSV -----------
def _node(name: str, pool: str, zone: str, cpu: str, memory: str, gpus: int = 0) -> str:
    labels = {"karpenter.sh/nodepool": pool, "topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}
    if gpus:
        labels["nvidia.com/gpu.product"] = "A100"
    alloc = {"cpu": cpu, "memory": memory, "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
         "status": {"allocatable": alloc, "capacity": alloc}}
    )  # fmt: skip


def _pod(name: str, cpu: str, memory: str, gpus: int = 0) -> str:
    req = {"cpu": cpu, "memory": memory, **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    spec = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": req, "limits": req}}]}
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}
    )


@pytest.fixture(scope="module")
def planner_report(tmp_path_factory) -> Path:
    """Two pools × two zones: general (4 cores, 8 GiB) and gpu (8 cores, 32 GiB, 2 A100s)."""
    d = tmp_path_factory.mktemp("planner")
    docs = [
        _node("gen-a", "general", "zone-a", "4", "8Gi"),
        _node("gen-b", "general", "zone-b", "4", "8Gi"),
        _node("gpu-a", "gpu", "zone-a", "8", "32Gi", gpus=2),
        _node("gpu-b", "gpu", "zone-b", "8", "32Gi", gpus=2),
        *(_pod(f"web-{i}", "1", "2Gi") for i in range(4)),
        *(_pod(f"train-{i}", "2", "8Gi", gpus=1) for i in range(3)),
        _pod("huge-0", "64", "1Gi"),
        _pod("huge-1", "64", "1Gi"),
        _pod("greedy", "1", "1Gi", gpus=8),
    ]
    (d / "cluster.yaml").write_text("---\n".join(docs))
    out = d / "report.html"
    kubesched("simulate", str(d / "cluster.yaml"), "--report", str(out))
    return out


def _csv_of(page, key: str) -> list[dict[str, str]]:
    with page.expect_download() as got:
        page.click(f"section#{key} button.csv")
    download = got.value
    assert download.suggested_filename == f"{key}.csv"
    return list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))


def test_planner_report_capacity_pending_and_placements(browser, planner_report):
    check(browser, planner_report, 8)
    page = browser.new_page(accept_downloads=True)
    page.goto(planner_report.resolve().as_uri())
    page.wait_for_function("window.kubeschedTables === 3", timeout=30_000)
    capacity = _csv_of(page, "capacity")
    rows = {(r["grouped by"], r["group"], r["resource"]): r for r in capacity}
    # 7 pods placed: web 4 × 1 core, train 3 × 2 cores; huge and greedy fit nowhere
    cluster_cpu = rows[("cluster", "all nodes", "cpu")]
    assert cluster_cpu["unit"] == "cores"
    assert [float(cluster_cpu[k]) for k in ("allocatable", "requested", "spare")] == [24, 10, 14]
    gpu_pool = rows[("node pool", "gpu", "nvidia.com/gpu")]
    assert [float(gpu_pool[k]) for k in ("nodes", "allocatable", "requested", "largest spare on one node")] == [
        2,
        4,
        3,
        1,
    ]
    assert float(rows[("GPU model", "A100", "nvidia.com/gpu")]["requested, % of allocatable"]) == 75
    memory = rows[("zone", "zone-a", "memory")]
    assert (memory["unit"], float(memory["allocatable"])) == ("GiB", 40)
    assert {r["group"] for r in capacity if r["grouped by"] == "node pool"} == {"general", "gpu"}
    assert not any(r["grouped by"] == "GPU model" and r["group"] == "(none)" for r in capacity)
    pending = _csv_of(page, "pending")
    assert [(r["pods"], r["examples"]) for r in pending] == [("2", "huge-0, huge-1"), ("1", "greedy")]
    assert all(r["last scheduling message"].startswith("0/4 nodes are available: ") for r in pending)
    assert "Insufficient nvidia.com/gpu" in pending[1]["last scheduling message"]
    placements = _csv_of(page, "placements")
    assert len(placements) == 10
    trains = [r for r in placements if r["pod"].startswith("train-")]
    assert {r["node pool"] for r in trains} == {"gpu"} and all(r["outcome"] == "Scheduled" for r in trains)
    # the placement table filters as one types (every word must match), the CSV stays whole
    section = page.locator("section#placements")
    assert section.locator("tbody tr").count() == 10
    assert section.locator(".count").text_content() == "10 rows"
    section.locator("input").fill("train gpu-a")
    on_a = sum(1 for r in trains if r["node"] == "gpu-a")
    assert section.locator("tbody tr").count() == on_a
    assert section.locator(".count").text_content() == f"{on_a} of 10 rows"
    section.locator("input").fill("Unschedulable")
    assert sorted(section.locator("tbody tr td:nth-child(2)").all_text_contents()) == ["greedy", "huge-0", "huge-1"]
    assert len(_csv_of(page, "placements")) == 10
    page.close()


def test_replay_report_tables(browser, tmp_path):
    pytest.importorskip("kubesched_gpushare", reason="the plugins/gpushare package is not installed")
    nodes, pods = write_nodes(tmp_path / "n.csv"), write_pods(tmp_path / "p.csv", n=150)
    out = tmp_path / "replay.html"
    args = ["replay", str(pods), "--cluster", str(nodes), "--mode", "arrivals", "--policy", "FGD"]
    kubesched(*args, "--report", str(out))
    run = subprocess.run([*KUBESCHED, *args, "-o", "json"], capture_output=True, text=True, check=True, timeout=300)
    summary = json.loads(run.stdout)["summary"]
    page = browser.new_page(accept_downloads=True)
    page.goto(out.resolve().as_uri())
    page.wait_for_function("window.kubeschedTables === 3", timeout=30_000)
    capacity = {(r["grouped by"], r["group"], r["resource"]): r for r in _csv_of(page, "capacity")}
    gpus = capacity[("cluster", "all nodes", "GPU")]
    assert (gpus["unit"], float(gpus["allocatable"])) == ("GPUs", summary["gpus"]) == ("GPUs", 4 * (8 + 8 + 2 + 2 + 4))
    # the GPUs in use at the end, as the paper counts them (shares as fractions of a GPU)
    used = summary["final"]["allocatedPct"] * summary["gpus"] / 100
    assert float(gpus["requested"]) == pytest.approx(used, abs=0.01)
    assert {k[1] for k in capacity if k[0] == "GPU model"} == {"G2", "T4", "V100M16"}
    placements = _csv_of(page, "placements")
    assert len(placements) == summary["bound"]
    pending = _csv_of(page, "pending")
    assert sum(int(r["pods"]) for r in pending) == summary["failed"] > 0
    section = page.locator("section#placements")
    section.locator("input").fill("T4")
    t4 = sum(1 for r in placements if r["GPU model"] == "T4")
    assert section.locator("tbody tr").count() == min(t4, 500) > 0
    page.close()


def test_drain_report_pods_replacements_and_capacity_before_and_after(browser, tmp_path):
    """The drain what-if of tests/test_drain.py's cluster (web 4 × 3 cores, one per node of
    spot-1, spot-2, base-1, base-2; an agent DaemonSet of 100m; a budget of minAvailable 3) with
    the spot pool drained: one web pod evicted whose replacement fits nowhere, the other refused."""
    from test_drain import cluster

    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(cluster(web_cpu="3", pdb={"minAvailable": 3})))
    out = tmp_path / "drain.html"
    args = ["drain", str(path), "-l", "karpenter.sh/nodepool=spot", "--timeout", "60s", "--report", str(out)]
    r = subprocess.run([*KUBESCHED, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr  # the pods do not all fit elsewhere
    check(browser, out, 2)
    page = browser.new_page(accept_downloads=True)
    page.goto(out.resolve().as_uri())
    page.wait_for_function("window.kubeschedTables === 5", timeout=30_000)
    pods = _csv_of(page, "pods")
    assert sorted((p["controller"].split("/")[0], p["outcome"]) for p in pods) == [
        ("DaemonSet", "left"),
        ("DaemonSet", "left"),
        ("ReplicaSet", "blocked"),
        ("ReplicaSet", "evicted"),
    ]
    assert {p["drained node"] for p in pods} == {"spot-1", "spot-2"}
    blocked = next(p for p in pods if p["outcome"] == "blocked")
    assert blocked["why / what kubectl drain needs"].startswith("Cannot evict pod as it would violate")
    [replacement] = _csv_of(page, "replacements")
    assert (replacement["placed on"], replacement["outcome"]) == ("", "Unschedulable")
    [pending] = _csv_of(page, "pending")
    assert pending["pods"] == "1" and pending["examples"] == replacement["pod"]
    assert pending["last scheduling message"].startswith(
        "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) were unschedulable."
    )

    def capacity(key: str) -> dict[tuple[str, str, str], dict[str, str]]:
        return {(c["grouped by"], c["group"], c["resource"]): c for c in _csv_of(page, key)}

    before, after = capacity("capacity-before"), capacity("capacity-after")
    # before: 4 nodes of 4 cores holding 4 × 3 + 4 × 0.1; after: base-1 and base-2 alone, each
    # still holding its web pod and its agent (the replacement waits)
    assert [float(before[("cluster", "all nodes", "cpu")][k]) for k in ("allocatable", "requested", "spare")] == [
        16,
        12.4,
        3.6,
    ]
    assert [float(after[("cluster", "all nodes", "cpu")][k]) for k in ("nodes", "allocatable", "requested")] == [
        2,
        8,
        6.2,
    ]
    assert {k[1] for k in before if k[0] == "node pool"} == {"spot", "base"}
    assert {k[1] for k in after if k[0] == "node pool"} == {"base"}
    page.close()


def test_size_report_answer_trials_and_what_one_node_fewer_leaves_pending(browser, tmp_path):
    """tests/test_size.py's workload: 23 pods of 900m / 2Gi and one that asks for an ssd node no
    template has; m5-xlarge (4 cores, 0.192) against m5-2xlarge (8 cores, 0.5). No template places
    every pod (exit 1): each is sized for the pods that fit, and the ssd pod is named with its cause."""
    from helpers import make_node, make_pod

    tpl, big, work = tmp_path / "tpl.yaml", tmp_path / "big.yaml", tmp_path / "w.yaml"
    tpl.write_text(yaml.safe_dump({"apiVersion": "v1", **make_node("m5-xlarge", cpu="4", memory="16Gi")}))
    big.write_text(yaml.safe_dump({"apiVersion": "v1", **make_node("m5-2xlarge", cpu="8", memory="32Gi")}))
    pods = [make_pod(f"web-{i}", cpu="900m", memory="2Gi", ns="shop") for i in range(23)]
    pods.append(make_pod("picky", cpu="100m", spec={"nodeSelector": {"disk": "ssd"}}))
    work.write_text(yaml.safe_dump_all([{"apiVersion": "v1", **p} for p in pods]))
    out = tmp_path / "size.html"
    args = [str(work), "--node-template", f"{tpl}:0.192", "--node-template", f"{big}:0.5", "--max-nodes", "40"]
    kubesched("size", *args, "--report", str(out), status=1)
    check(browser, out, 1)
    page = browser.new_page(accept_downloads=True)
    page.goto(out.resolve().as_uri())
    page.wait_for_function("window.kubeschedTables === 4", timeout=30_000)
    options = {r["node template"]: r for r in _csv_of(page, "options")}
    assert [
        (options[t]["nodes to add"], options[t]["nodes for the pods that fit"], options[t]["cheapest"]) for t in options
    ] == [("", "6", "false"), ("", "3", "false")]
    trials = _csv_of(page, "trials")
    small = {int(r["nodes"]): r["every pod placed"] for r in trials if r["node template"] == "m5-xlarge"}
    assert small[6] == "true" and small.get(5, "false") == "false"
    assert len(trials) == sum(int(r["trials"]) for r in options.values())
    short = _csv_of(page, "short")
    assert [(r["node template"], r["pods"]) for r in short] == [("m5-xlarge", "3"), ("m5-2xlarge", "7")]
    assert all("Insufficient cpu" in r["last scheduling message"] for r in short)
    unplaceable = _csv_of(page, "unplaceable")
    assert [(r["node template"], r["pod"]) for r in unplaceable] == [
        ("m5-xlarge", "default/picky"),
        ("m5-2xlarge", "default/picky"),
    ]
    assert all(r["alone on one node of the template"].startswith("0/1 nodes are available: 1 node(s) didn't match")
               for r in unplaceable)  # fmt: skip
    page.close()


def test_diff_report_names_the_pods_that_changed(browser, tmp_path):
    """Two simulations: B has lost node n2 and gained a small n3. The report's tables name the pod
    that moved (with both nodes), the one that went pending (with B's message), and none placed."""
    from helpers import make_node, make_pod

    pods = [make_pod("small", cpu="1"), make_pod("big", cpu="3"), make_pod("late", cpu="3")]
    runs = []
    for name, nodes in (("a", ["n1", "n2"]), ("b", ["n1", "n3"])):
        src = tmp_path / f"{name}.yaml"
        cpus = {"n1": "4", "n2": "4", "n3": "1"}
        objs = [make_node(n, cpu=cpus[n]) for n in nodes] + pods
        src.write_text(yaml.safe_dump_all([{"apiVersion": "v1", **o} for o in objs]))
        r = subprocess.run(
            [*KUBESCHED, "simulate", str(src), "-o", "json"], capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 0, r.stderr
        (tmp_path / f"{name}.json").write_text(r.stdout)
        runs.append({p["name"]: p["nodeName"] for p in json.loads(r.stdout)["pods"]})
    out = tmp_path / "diff.html"
    kubesched("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--report", str(out))
    check(browser, out, 1)
    page = browser.new_page(accept_downloads=True)
    page.goto(out.resolve().as_uri())
    page.wait_for_function("window.kubeschedTables === 3", timeout=30_000)
    a, b = runs
    moved = [(r["pod"], r["node in A"], r["node in B"]) for r in _csv_of(page, "moved")]
    assert moved and moved == [(f"default/{n}", a[n], b[n]) for n in sorted(a) if a[n] and b[n] and a[n] != b[n]]
    pending = _csv_of(page, "pending")
    assert pending
    assert [r["pod"] for r in pending] == [f"default/{n}" for n in sorted(a) if a[n] and not b[n]]
    assert all(r["message in B"].startswith("0/2 nodes are available") for r in pending)
    assert _csv_of(page, "placed") == []
    page.close()


def test_size_reports_trials_are_spaced_as_categories_in_their_order():
    """The widest trial (1,000 nodes) beside the search's 0, 1, 2, 4: each its own place on the axis."""
    from kubesched.report.size import _trials_figure

    trials = [{"nodes": n, "fits": n >= 3} for n in (1000, 0, 1, 2, 4, 3)]
    fig = _trials_figure([{"template": "m5", "trials": trials}])
    assert fig.layout.xaxis.type == "category"
    assert list(fig.layout.xaxis.categoryarray) == ["0", "1", "2", "3", "4", "1000"]
    assert list(fig.data[0].x) == ["0", "1", "2", "3", "4", "1000"]
