"""End-to-end: ``kubesched simulate`` on manifests, through the CLI."""

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from helpers import make_node, make_pod
from kubesched.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"
EXAMPLE = str(EXAMPLES / "basic")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["simulate", *args])
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, *docs: dict, name: str = "cluster.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_example_placements_and_messages() -> None:
    code, out, _ = run(EXAMPLE, "--output", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"pods", "deletedPods", "rejected", "events", "stats", "nodes", "metrics"}
    pods = {p["name"]: p for p in doc["pods"]}
    assert pods["db"]["nodeName"] == "node-a"
    assert pods["trainer"]["nodeName"] == "gpu-1"
    assert {pods["web-1"]["nodeName"], pods["web-2"]["nodeName"]} == {"node-a", "node-b"}  # host port 8080
    assert pods["batch-big"]["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert pods["trainer-2"]["message"] == (
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
        "preemption: 0/3 nodes are available: "
        "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
    )
    assert pods["gated"]["nodeName"] is None and pods["gated"]["reason"] == "SchedulingGated"
    assert pods["gated"]["message"] == "waiting for scheduling gates: [example.com/quota]"
    assert {
        "type": "Normal",
        "reason": "Scheduled",
        "namespace": "shop",
        "name": "db",
        "message": "Successfully assigned shop/db to node-a",
        "count": 1,
    } in doc["events"]
    assert doc["stats"]["bound"] == 4 and doc["stats"]["pending"] == 3


def test_topology_example_spreads_and_keeps_apart() -> None:
    code, out, _ = run(str(EXAMPLES / "topology"), "--output", "json", "--explain", "shop/api-2")
    assert code == 0
    doc = json.loads(out)
    pods = {p["name"]: p for p in doc["pods"]}
    zone = {"node-a": 1, "node-b": 1, "node-c": 2, "node-d": 2}

    def where(prefix: str) -> list[str]:
        return [p["nodeName"] for name, p in sorted(pods.items()) if name.startswith(prefix) and p["nodeName"]]

    assert sorted(zone[n] for n in where("web-")) == [1, 1, 2, 2]  # DoNotSchedule, maxSkew 1 over zones
    assert len(set(where("api-"))) == 4
    # api-2 gets the System default constraints from the Service; api-1 is on node-b in zone 1:
    # raw counts × ln(domains + 2) + (maxSkew − 1) are 7, 9, 6, 6, normalized 100 × (9 + 6 − s) / 9
    # as kube-scheduler-simulator writes them: score-result the raw scores, finalscore-result the
    # normalized ones × the plugin's weight (2), both as strings
    explained = doc["explain"]["shop/api-2"]
    raw = explained["score-result"]
    assert {n: s["PodTopologySpread"] for n, s in raw.items()} == {
        "node-a": "7",
        "node-b": "9",
        "node-c": "6",
        "node-d": "6",
    }
    final = explained["finalscore-result"]
    assert {n: s["PodTopologySpread"] for n, s in final.items()} == {
        "node-a": "176",
        "node-b": "132",
        "node-c": "200",
        "node-d": "200",
    }
    assert len(set(where("cache-"))) == 2  # anti-affinity to each other by hostname
    assert len(set(where("etl-"))) == 4 and pods["etl-5"]["nodeName"] is None
    assert pods["etl-5"]["message"] == (
        "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules. "
        ""
        "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
    )


def test_same_seed_same_output() -> None:
    outs = {
        json.dumps(
            {k: v for k, v in json.loads(run(EXAMPLE, "--output", "json", "--seed", "7")[1]).items() if k != "stats"}
        )
        for _ in range(2)
    }
    assert len(outs) == 1


def test_explain_has_simulator_shapes(tmp_path: Path) -> None:
    _code, out, _ = run(EXAMPLE, "--output", "json", "--explain", "shop/db")
    exp = json.loads(out)["explain"]["shop/db"]
    assert exp["filter-result"]["node-b"]["NodeAffinity"] == "node(s) didn't match Pod's node affinity/selector"
    assert exp["filter-result"]["node-a"]["NodeResourcesFit"] == "passed"
    assert exp["selectedNode"] == "node-a"
    # node-a is the only feasible node: schedulePod returns it without running PreScore or Score
    assert exp["score-result"] == exp["finalscore-result"] == exp["prescore-result"] == {}
    assert exp["selected-node"] if "selected-node" in exp else exp["selectedNode"] == "node-a"
    assert exp["prefilter-result-status"]["NodeResourcesFit"] == "success"
    assert exp["bind-result"] == {"DefaultBinder": "success"}


def test_unknown_priority_class_is_rejected_and_the_run_goes_on(tmp_path: Path) -> None:
    bad = make_pod("p", cpu="1", spec={"priorityClassName": "nope"})
    del bad["spec"]["priority"]
    path = write(tmp_path, make_node("n"), bad, make_pod("ok", cpu="1"))
    doc = json.loads(run(path, "--output", "json")[1])
    assert doc["rejected"] == [
        {"kind": "Pod", "namespace": "default", "name": "p", "message": "no PriorityClass with name nope was found"}
    ]
    assert [p["name"] for p in doc["pods"]] == ["ok"]


def test_pods_bound_in_the_input_take_their_room(tmp_path: Path) -> None:
    # a pod already bound by spec.nodeName is counted, so the second one does not fit
    running = make_pod("running", cpu="3", node="n")
    path = write(tmp_path, make_node("n", cpu="4"), running, make_pod("new", cpu="2"))
    pods = {p["name"]: p for p in json.loads(run(path, "--output", "json")[1])["pods"]}
    assert pods["running"]["nodeName"] == "n"
    assert pods["new"]["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        ""
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_config_weights_and_disabled_plugins(tmp_path: Path) -> None:
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}}],
    }
    tainted = make_node("t", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    path = write(tmp_path, tainted, make_pod("p", cpu="1"))
    cfg_path = write(tmp_path, cfg, name="config.yaml")
    pods = json.loads(run(path, "--config", cfg_path, "--output", "json")[1])["pods"]
    assert pods[0]["nodeName"] == "t"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("kind: Pod\nmetadata: {name: x\n", "malformed YAML"),
        (
            "kind: Pod\nmetadata: {name: x}\n"
            "spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: lots}}}]}\n",
            "field spec.containers[0].resources.requests[cpu]",
        ),
        ("kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: 1Qi}}\n", "field status.allocatable[memory]"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "podInitialBackoffSeconds: 0\n",
            "field podInitialBackoffSeconds",
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
            "- plugins: {score: {enabled: [{name: Nope}]}}\n",
            'plugin "Nope" does not exist',
        ),
        (
            "kind: PodDisruptionBudget\nmetadata: {name: b}\n"
            "spec: {minAvailable: 1, selector: {matchExpressions: [{key: a, operator: Bogus}]}}\n",
            "PodDisruptionBudget default/b: field spec.selector.matchExpressions[0].operator",
        ),
        (
            "kind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {minAvailable: 1, maxUnavailable: 1}\n",
            "minAvailable and maxUnavailable cannot be both set",
        ),
        ("kind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {maxUnavailable: 150%}\n", "field spec.maxUnavailable"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    code, _out, err = run(str(path))
    assert code == 2
    assert expected in err and str(path) in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_file() -> None:
    code, _, err = run("/no/such/file.yaml")
    assert code == 2 and "no such file" in err


def test_preemption_example_spares_the_budgeted_pods() -> None:
    code, out, _ = run(str(Path(EXAMPLE).parent / "preemption"), "--output", "json")
    assert code == 0
    doc = json.loads(out)
    pods = {p["name"]: p for p in doc["pods"]}
    assert pods["api"]["nodeName"] == "node-b" and pods["api"]["message"] is None
    assert doc["deletedPods"] == [
        {"namespace": "default", "name": "etl-1", "nodeName": "node-b", "reason": "PreemptionByScheduler"},
        {"namespace": "default", "name": "etl-2", "nodeName": "node-b", "reason": "PreemptionByScheduler"},
    ]
    assert doc["stats"]["virtualSeconds"] == 10  # the victims' grace period
    preempted = [e for e in doc["events"] if e["reason"] == "Preempted"]
    assert [e["name"] for e in preempted] == ["etl-1", "etl-2"]
    assert all(
        e["message"].startswith("Preempted by pod ") and e["message"].endswith(" on node node-b") for e in preempted
    )


def test_an_unreachable_extender_stops_the_run_with_one_warning(tmp_path: Path) -> None:
    """Upstream retries errors forever; on the virtual clock that was a week of attempts (a minute
    of wall time). The run stops once attempts only err and the pods say why."""
    from tests.live import free_port

    port = free_port()  # nothing listens there: every filter call is refused
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"extenders: [{{urlPrefix: 'http://127.0.0.1:{port}', filterVerb: filter}}]\n"
    )
    path = write(tmp_path, make_node("n"), make_pod("a", cpu="1"), make_pod("b", cpu="1"))
    code, out, err = run(path, "--config", str(cfg), "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert {p["reason"] for p in doc["pods"]} == {"SchedulerError"}
    assert all(f"http://127.0.0.1:{port}/filter" in p["message"] for p in doc["pods"])
    assert doc["stats"]["attempts"] == 100 and doc["stats"]["virtualSeconds"] < 3600
    assert err.splitlines() == [
        f"kubesched: warning: stopped scheduling at {doc['stats']['virtualSeconds']:.0f}s of virtual time: the last "
        "100 attempts all ended in errors and nothing changed (the pods' messages say why)"
    ]


def test_an_unknown_kind_is_an_error_naming_the_file_document_and_kind(tmp_path: Path) -> None:
    """kubectl's "no matches for kind": a typo'd kind does not pass for an empty cluster."""
    path = tmp_path / "cluster.yaml"
    path.write_text(
        yaml.safe_dump_all([make_node("n"), {"apiVersion": "v1", "kind": "Pdo", "metadata": {"name": "x"}}])
    )
    result = CliRunner().invoke(main, ["simulate", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        f'kubesched: error: {path}: document 1: no matches for kind "Pdo" in version "v1"'
    )
