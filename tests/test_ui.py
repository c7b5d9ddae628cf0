"""The web UI of ``kubesched up`` in a real headless Chromium (Debian's, installed by .ci/run)
through Playwright, against a real ``kubesched up`` process: the token, the live node cards,
a pod created in the YAML editor going from pending to placed, its filter and score table
equal to the results on the pod, and a configuration edit changing a later placement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from browser import launch, needs_chromium
from live import Server, wait_for

pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extras have it)")
pytestmark = needs_chromium


PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    server = Server(tmp_path_factory.mktemp("ui") / "data", command="up", nodes=3).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    yield from launch()


def token(server: Server) -> str:
    return yaml.safe_load(server.kubeconfig.read_text())["users"][0]["user"]["token"]


def ui(server: Server, path: str = "/") -> str:
    return f"http://127.0.0.1:{server.ui_port}{path}"


def get_pod(server: Server, name: str) -> dict:
    code, pod = server.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    assert code == 200
    return pod


def open_ui(browser, server: Server):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(ui(server, "/"))  # no session yet: the login form
    page.fill("input[name=token]", token(server))
    page.click("button[type=submit]")
    page.wait_for_selector("[data-live=true]")
    return page, errors


def apply_yaml(page, text: str) -> str:
    page.goto(page.url.split("#")[0] + "#/edit")
    page.wait_for_selector("textarea[name=yaml]")
    before = page.locator("[data-message]").all_inner_texts()
    page.fill("textarea[name=yaml]", text)
    page.click("button[name=apply]")
    # the answer to this apply, not the message an earlier one left on the page
    return wait_for(lambda: next((m for m in page.locator("[data-message]").all_inner_texts() if [m] != before), None))


def test_a_pod_from_the_editor_waits_then_lands_and_its_table_matches_the_annotations(browser, cluster) -> None:
    page, errors = open_ui(browser, cluster)
    assert page.locator(".node").count() == 3
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280  # no sideways scrolling
    assert page.locator(".node h3").all_inner_texts()[0].startswith("node-0")
    # a pod that needs a label no node has: pending, with kube-scheduler's reason, in the queue
    pod = """apiVersion: v1
kind: Pod
metadata:
  name: wants-ssd
spec:
  nodeSelector:
    disktype: ssd
  containers:
  - name: app
    image: pause
    resources:
      requests:
        cpu: 500m
"""
    assert "applied: Pod default/wants-ssd" in apply_yaml(page, pod)
    page.click("header nav a[href='#/']")
    row = page.wait_for_selector(".pending tr[data-pod='default/wants-ssd']")
    wait_for(lambda: "didn't match Pod's node affinity/selector" in row.inner_text())
    page.wait_for_selector("table.queue tr[data-queue=unschedulablePods][data-pod='default/wants-ssd']")
    # its page says what the attempt came to and what preemption did, as kubesched explain does
    page.goto(ui(cluster, "/#/pod/default/wants-ssd"))
    verdict = page.wait_for_selector("[data-verdict=Verdict]")
    assert verdict.inner_text() == (
        "not scheduled: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    )
    preemption = page.locator("[data-verdict=Preemption]").inner_text()
    assert preemption == "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    assert page.locator("[data-point=postfilter-result]").count() == 0  # no "node-0: –; …"
    # the FailedScheduling event's type is one word on one line at 1280 px, not "Warnin g"
    cell = page.wait_for_selector("td:text-is('Warning')")
    assert cell.evaluate("e => e.getBoundingClientRect().height < 1.5 * parseFloat(getComputedStyle(e).lineHeight)")
    # label node-1 in the editor: the pod is placed there, and its chip appears on node-1's card
    node = yaml.safe_load(get_node_yaml(page, "node-1"))
    node["metadata"]["labels"]["disktype"] = "ssd"
    assert "applied: Node node-1" in apply_yaml(page, yaml.safe_dump(node))
    page.click("header nav a[href='#/']")
    page.wait_for_selector(".node[data-node=node-1] .chip[data-pod='default/wants-ssd']", timeout=20_000)
    assert page.locator(".pending tr[data-pod='default/wants-ssd']").count() == 0
    # its page: the filter verdicts and scores are those on the pod, the winner highlighted
    page.click(".node[data-node=node-1] .chip[data-pod='default/wants-ssd']")
    page.wait_for_selector("table.results tr.win")
    anns = get_pod(cluster, "wants-ssd")["metadata"]["annotations"]
    filters = json.loads(anns[PREFIX + "filter-result"])
    final = json.loads(anns[PREFIX + "finalscore-result"])
    raw = json.loads(anns[PREFIX + "score-result"])
    assert anns[PREFIX + "selected-node"] == "node-1"
    assert page.locator("table.results tr.win").get_attribute("data-node") == "node-1"
    for node_name, verdicts in filters.items():
        for plugin, verdict in verdicts.items():
            cell = page.locator(f"table.results tr[data-node='{node_name}'] td[data-filter='{plugin}']")
            assert cell.inner_text() == verdict
    assert filters["node-0"]["NodeAffinity"] == "node(s) didn't match Pod's node affinity/selector"
    # node-1 is the only feasible node: upstream scores nothing, and neither does the table
    assert raw == final == {}
    assert page.locator("table.results td[data-total]").all_inner_texts() == ["", "", ""]
    assert page.locator("[data-verdict=Verdict]").inner_text() == "scheduled on node-1"
    assert page.locator("[data-verdict=Scoring]").inner_text() == (
        "skipped: only one node passed Filter, and a single feasible node is not scored"
    )
    # the UI's writes are not logged line by line by the HTTP client
    assert "HTTP Request:" not in (cluster.data_dir.parent / f"{cluster.data_dir.name}.log").read_text()
    assert errors == []
    page.close()


def get_node_yaml(page, name: str) -> str:
    return page.evaluate(f"fetch('/api/yaml/Node/-/{name}').then(r => r.text())")


def test_scores_on_the_pod_page_and_a_config_edit_changes_a_later_placement(browser, cluster) -> None:
    page, errors = open_ui(browser, cluster)

    def pod(name: str) -> str:
        return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: app
    image: pause
    resources:
      requests:
        cpu: "1"
"""

    def placed(name: str) -> str:
        return wait_for(lambda: (get_pod(cluster, name).get("spec") or {}).get("nodeName"), timeout=20)

    assert "applied" in apply_yaml(page, pod("a"))
    first = placed("a")
    assert "applied" in apply_yaml(page, pod("b"))
    second = placed("b")
    assert second != first  # LeastAllocated spreads
    # the pod page shows each score as raw → normalized × weight, totals as on the pod
    page.goto(ui(cluster, "/#/pod/default/b"))
    page.wait_for_selector("table.results tr.win")
    final = json.loads(get_pod(cluster, "b")["metadata"]["annotations"][PREFIX + "finalscore-result"])
    raw = json.loads(get_pod(cluster, "b")["metadata"]["annotations"][PREFIX + "score-result"])
    for node_name, scores in final.items():
        row = page.locator(f"table.results tr[data-node='{node_name}']")
        assert row.locator("td[data-total]").inner_text() == str(sum(int(v) for v in scores.values()))
        for plugin, value in scores.items():
            cell = row.locator(f"td[data-score='{plugin}']")
            assert cell.get_attribute("data-final") == value
            assert cell.get_attribute("data-raw") == raw[node_name][plugin]
    assert page.locator("table.results tr.win").get_attribute("data-node") == second
    # MostAllocated: the next pod joins a node that already has one
    page.goto(ui(cluster, "/#/config"))
    wait_for(lambda: "profiles" in page.input_value("textarea[name=config]"))  # (the page's CSP forbids eval)
    config = yaml.safe_load(page.input_value("textarea[name=config]"))
    fit = next(pc for pc in config["profiles"][0]["pluginConfig"] if pc["name"] == "NodeResourcesFit")
    fit["args"]["scoringStrategy"]["type"] = "MostAllocated"
    page.fill("textarea[name=config]", yaml.safe_dump(config))
    page.click("button[name=apply-config]")
    assert "restarted" in page.wait_for_selector("[data-message]").inner_text()
    assert "applied" in apply_yaml(page, pod("c"))
    assert placed("c") in (first, second)
    assert errors == []
    # an invalid configuration is refused with the field named; the scheduler goes on
    page.goto(ui(cluster, "/#/config"))
    wait_for(lambda: "profiles" in page.input_value("textarea[name=config]"))  # (the page's CSP forbids eval)
    fit["args"]["scoringStrategy"]["type"] = "Sideways"
    page.fill("textarea[name=config]", yaml.safe_dump(config))
    page.click("button[name=apply-config]")
    message = page.wait_for_selector("[data-message].error").inner_text()
    assert "scoringStrategy.type" in message and "Sideways" in message
    assert errors == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
    page.close()


def test_bad_yaml_in_the_editor_gets_the_api_servers_message(browser, cluster) -> None:
    page, _ = open_ui(browser, cluster)
    msg = apply_yaml(page, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers: []\n")
    assert "spec.containers: Required value" in msg
    msg = apply_yaml(page, "kind: [unclosed")
    assert "does not parse" in msg
    page.close()


def test_screenshot_for_the_readme(browser, cluster, tmp_path: Path) -> None:
    """The README's picture is this page; the test keeps it renderable (it writes to tmp)."""
    page, errors = open_ui(browser, cluster)
    page.wait_for_selector(".node .chip")
    page.screenshot(path=str(tmp_path / "ui.png"))
    assert (tmp_path / "ui.png").stat().st_size > 10_000
    assert errors == []
    page.close()
