"""The scheduling results written on pods, in kube-scheduler-simulator's annotation keys and JSON
shapes (``simulator/scheduler/plugin/resultstore``): the simulator's own store cases, then the
results of real scheduling attempts, checked against upstream's verdicts, messages and score
formulas, and against ``simulate --explain`` on the same cluster."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import make_node, make_pod, make_priority_class
from kubesched.cli import main
from kubesched.scheduler import resultstore as rs
from kubesched.scheduler.resultstore import PodResults, _listed, go_duration, go_json, parse
from kubesched.testing import Cluster

# what RunFilterPlugins runs for a plain pod: the other default filters' PreFilter returns Skip
RAN = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeResourcesFit")
SKIPPED_PREFILTER = (
    "DynamicResources",
    "NodeDeclaredFeatures",
    "InterPodAffinity",
    "NodeAffinity",
    "NodePorts",
    "NodeVolumeLimits",
    "PodTopologySpread",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
)


def test_the_simulators_get_stored_result_case() -> None:
    # TestStore_GetStoredResult "success" in the simulator's store_test.go: the same results give
    # the same annotations, each value Go's json.Marshal of the map
    r = PodResults(
        selected_node="node",
        pre_score={"plugin1": "preScore"},
        pre_filter_status={"plugin1": "preFilterStatus"},
        pre_filter_result={"plugin1": ["node2", "node1"]},
        permit={"plugin1": "permit"},
        permit_timeout={"plugin1": "1s"},
        reserve={"plugin1": "reserve"},
        pre_bind={"plugin1": "prebind"},
        bind={"plugin1": "bind"},
        filter={"node0": {"plugin1": "passed"}, "node1": {"plugin1": "passed"}},
        final_score={"node0": {"plugin1": "20"}, "node1": {"plugin1": "20"}},
        post_filter={"node0": {"plugin1": "preemption victim"}, "node1": {}},
        score={"node0": {"plugin1": "10"}, "node1": {"plugin1": "10"}},
    )
    p = "kube-scheduler-simulator.sigs.k8s.io/"
    assert r.annotations() == {
        p + "selected-node": "node",
        p + "prescore-result": '{"plugin1":"preScore"}',
        p + "prefilter-result": '{"plugin1":["node1","node2"]}',
        p + "prefilter-result-status": '{"plugin1":"preFilterStatus"}',
        p + "permit-result": '{"plugin1":"permit"}',
        p + "permit-result-timeout": '{"plugin1":"1s"}',
        p + "reserve-result": '{"plugin1":"reserve"}',
        p + "prebind-result": '{"plugin1":"prebind"}',
        p + "bind-result": '{"plugin1":"bind"}',
        p + "filter-result": '{"node0":{"plugin1":"passed"},"node1":{"plugin1":"passed"}}',
        p + "finalscore-result": '{"node0":{"plugin1":"20"},"node1":{"plugin1":"20"}}',
        p + "postfilter-result": '{"node0":{"plugin1":"preemption victim"},"node1":{}}',
        p + "score-result": '{"node0":{"plugin1":"10"},"node1":{"plugin1":"10"}}',
    }


def test_post_filter_result_marks_the_nominated_node() -> None:
    # AddPostFilterResult: every node PostFilter was given gets a map; the nominated one the message
    r = PodResults()
    r.post_filter_result("DefaultPreemption", "node1", ["node0", "node1", "node2"])
    assert r.post_filter == {"node0": {}, "node1": {"DefaultPreemption": "preemption victim"}, "node2": {}}
    nobody = PodResults()
    nobody.post_filter_result("DefaultPreemption", "", ["node0"])
    assert nobody.post_filter == {"node0": {}}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1, "1s"),
        (0.5, "500ms"),
        (1.5, "1.5s"),
        (90, "1m30s"),
        (600, "10m0s"),
        (3600, "1h0m0s"),
        (0.0001, "100µs"),
        (900, "15m0s"),
    ],
)
def test_permit_timeouts_read_as_go_durations(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_json_is_written_as_go_marshals_it() -> None:
    # keys sorted, no spaces, HTML-sensitive characters escaped, other text as UTF-8
    assert go_json({"b": "<a&b>", "a": "é"}) == '{"a":"é","b":"\\u003ca\\u0026b\\u003e"}'
    assert json.loads(go_json({"b": "<a&b>"})) == {"b": "<a&b>"}
    # encoding/json escapes the JavaScript line terminators too
    assert go_json(["a\u2028b\u2029c"]) == '["a\\u2028b\\u2029c"]'
    assert json.loads(go_json(["a\u2028b\u2029c"])) == ["a\u2028b\u2029c"]


def test_groups_of_an_earlier_attempt_are_cleared_when_a_later_one_has_none() -> None:
    """Our own key is reset to an empty list rather than left describing an older attempt."""
    grouped = PodResults(groups=[{"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "nodes": 9}])
    first = grouped.pod_annotations(None)
    assert json.loads(first[rs.GROUPS])[0]["nodes"] == 9
    second = PodResults(selected_node="n1").pod_annotations(first)
    assert second[rs.GROUPS] == "[]"
    assert rs.GROUPS not in PodResults().pod_annotations(None)  # never written when there never were any


def test_history_appends_each_attempt_and_drops_the_oldest_past_the_limit() -> None:
    first = PodResults(selected_node="")
    anns = first.pod_annotations(None)
    assert [h[rs.SELECTED_NODE] for h in json.loads(anns[rs.HISTORY])] == [""]
    second = PodResults(selected_node="n1").pod_annotations(anns)
    assert [h[rs.SELECTED_NODE] for h in json.loads(second[rs.HISTORY])] == ["", "n1"]
    big = [{"x": "y" * 100_000}] * 3  # 300 kB of older attempts: only the newest that fit stay
    kept = json.loads(PodResults().pod_annotations({rs.HISTORY: json.dumps(big)})[rs.HISTORY])
    assert len(kept) == 3 and kept[0] == big[0] and len(go_json(kept)) <= rs.ANNOTATION_LIMIT


def _annotations(c: Cluster, name: str) -> dict:
    return parse(c.store.get("Pod", "default", name)["metadata"].get("annotations") or {}) or {}


@pytest.fixture
def cluster() -> Cluster:
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    return Cluster(
        make_node("node-a", cpu="4"),
        make_node("node-b", cpu="2"),
        make_node("node-c", cpu="4", taints=taint),
        results=True,
    )


def test_a_placed_pod_carries_every_extension_points_results(cluster: Cluster) -> None:
    cluster.create(make_pod("first", cpu="3"))
    cluster.settle()
    got = _annotations(cluster, "first")
    passed = dict.fromkeys(RAN, "passed")
    # RunFilterPlugins stops at the first plugin that rejects a node; skipped filters are absent
    assert got["filter-result"] == {
        "node-a": passed,
        "node-b": {**passed, "NodeResourcesFit": "Insufficient cpu"},
        "node-c": {"NodeUnschedulable": "passed", "NodeName": "passed", "TaintToleration": ERR_TAINT},
    }
    assert got["prefilter-result-status"] == {"NodeResourcesFit": "success", **dict.fromkeys(SKIPPED_PREFILTER, "")}
    assert got["prefilter-result"] == {}
    # one feasible node: schedulePod returns it without PreScore or Score
    assert got["prescore-result"] == got["score-result"] == got["finalscore-result"] == {}
    assert got["selected-node"] == "node-a"
    assert got["reserve-result"] == {"DynamicResources": "success", "VolumeBinding": "success"}
    assert got["permit-result"] == got["permit-result-timeout"] == {}
    # v1.37: the PreBind plugins' pre-flights skip for a pod without claims, so PreBind never runs them
    assert got["prebind-result"] == {}
    assert got["bind-result"] == {"DefaultBinder": "success"}
    assert got["postfilter-result"] == {}
    assert len(got["result-history"]) == 1


ERR_TAINT = "node(s) had untolerated taint(s)"


def test_scores_are_raw_and_final_is_normalized_times_weight(cluster: Cluster) -> None:
    cluster.create(make_pod("first", cpu="3"))
    cluster.settle()
    cluster.create(make_pod("second", cpu="1"))
    cluster.settle()
    got = _annotations(cluster, "second")
    assert set(got["score-result"]) == {"node-a", "node-b"}
    # NodeResourcesFit LeastAllocated, cpu and memory weighted 1 (memory defaults to 200Mi a pod):
    # node-a cpu (4000-4000)·100/4000 = 0, memory (32Gi-400Mi)·100/32Gi = 98 → 49;
    # node-b cpu (2000-1000)·100/2000 = 50, memory (32Gi-200Mi)·100/32Gi = 99 → 74
    assert got["score-result"]["node-a"]["NodeResourcesFit"] == "49"
    assert got["score-result"]["node-b"]["NodeResourcesFit"] == "74"
    assert got["finalscore-result"]["node-b"]["NodeResourcesFit"] == "74"  # weight 1, not normalized
    # TaintToleration counts intolerable PreferNoSchedule taints (0), normalized in reverse to
    # 100, weight 3
    for node in ("node-a", "node-b"):
        assert got["score-result"][node]["TaintToleration"] == "0"
        assert got["finalscore-result"][node]["TaintToleration"] == "300"
    totals = {n: sum(int(v) for v in s.values()) for n, s in got["finalscore-result"].items()}
    assert got["selected-node"] == max(totals, key=totals.__getitem__) == "node-b"
    assert got["prescore-result"]["NodeResourcesFit"] == "success"
    assert got["prescore-result"]["NodeAffinity"] == ""  # Skip: nothing to prefer


def test_results_ride_in_the_binding_one_write(cluster: Cluster) -> None:
    watch = cluster.store.watch(["Pod"])
    cluster.create(make_pod("p", cpu="1"))
    cluster.settle()
    writes = [e for e in watch.drain() if e.obj["metadata"]["name"] == "p"]
    assert [e.type for e in writes] == ["ADDED", "MODIFIED"]  # the binding, with the annotations
    assert writes[1].obj["spec"]["nodeName"] and rs.FILTER in writes[1].obj["metadata"]["annotations"]


def test_an_unschedulable_pod_gets_a_patch_per_attempt_and_its_history(cluster: Cluster) -> None:
    cluster.create(make_pod("huge", cpu="8"))
    cluster.settle()
    got = _annotations(cluster, "huge")
    assert got["selected-node"] == ""
    assert {n: v["NodeResourcesFit"] for n, v in got["filter-result"].items() if "NodeResourcesFit" in v} == {
        "node-a": "Insufficient cpu",
        "node-b": "Insufficient cpu",
    }
    # DefaultPreemption ran and nominated nobody: every explicitly rejected node gets an empty map
    assert got["postfilter-result"] == {"node-a": {}, "node-b": {}, "node-c": {}}
    assert got["reserve-result"] == got["bind-result"] == {}
    cluster.create(make_node("node-d", cpu="16"))  # a Node add moves it back: a second attempt
    cluster.advance(2)  # after its backoff
    got = _annotations(cluster, "huge")
    assert got["selected-node"] == "node-d"
    history = got["result-history"]
    assert [h[rs.SELECTED_NODE] for h in history] == ["", "node-d"]


def test_preemption_marks_the_nominated_node(cluster: Cluster) -> None:
    cluster.create(make_priority_class("high", 100))
    cluster.create(make_pod("low", cpu="2", priority_class=None))
    cluster.settle()
    low_node = cluster.node_of("low")
    assert low_node == "node-a"  # LeastAllocated: 2 of 4 cpus beats 2 of 2
    cluster.create(make_pod("high", cpu="4", priority_class="high"))
    cluster.settle()
    got = _annotations(cluster, "high")
    victims = {n: v for n, v in got["postfilter-result"].items() if v}
    # node-a frees 4 cpus by evicting "low"; node-b has only 2 cpus, node-c the taint
    assert victims == {"node-a": {"DefaultPreemption": "preemption victim"}}
    assert got["selected-node"] == ""


def test_over_the_limit_filtered_out_nodes_are_grouped_by_reason() -> None:
    nodes = [make_node(f"small-{i}", cpu="1") for i in range(6)]
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    nodes += [make_node(f"tainted-{i}", cpu="8", taints=taint) for i in range(3)]
    nodes += [make_node(f"big-{i}", cpu="8") for i in range(3)]
    c = Cluster(*nodes, results=True, results_node_limit=4)
    c.create(make_pod("p", cpu="2"))
    c.settle()
    anns = c.store.get("Pod", "default", "p")["metadata"]["annotations"]
    got = parse(anns) or {}
    listed = got["filter-result"]
    assert len(listed) == 4
    assert {n for n in listed if n.startswith("big-")} == {"big-0", "big-1", "big-2"}  # the feasible, best first
    assert got["selected-node"] in listed
    groups = {(g["plugin"], g["reason"]): g["nodes"] for g in got["filter-result-groups"]}
    listed_rejected = [n for n in listed if not n.startswith("big-")]
    assert sum(groups.values()) + len(listed_rejected) == 9
    assert set(groups) <= {("NodeResourcesFit", "Insufficient cpu"), ("TaintToleration", ERR_TAINT)}
    assert all(len(g["examples"]) <= 3 for g in got["filter-result-groups"])


def test_off_by_default_in_the_scheduler() -> None:
    c = Cluster(make_node("n"))
    c.create(make_pod("p", cpu="1"))
    c.settle()
    annotations = c.store.get("Pod", "default", "p")["metadata"].get("annotations") or {}
    assert not any(k.startswith(rs.PREFIX) for k in annotations)


def test_annotations_agree_with_simulate_explain(tmp_path: Path) -> None:
    # the same cluster, scheduled by simulate --explain and by a scheduler writing results: the
    # same verdicts and scores (the time and attempt fields are simulate's own)
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    objs = [
        make_node("node-a", cpu="4"),
        make_node("node-b", cpu="2"),
        make_node("node-c", cpu="4", taints=taint),
        make_pod("first", cpu="3"),
        make_pod("second", cpu="1"),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([{**o, "apiVersion": "v1"} for o in objs]))
    out = CliRunner().invoke(main, ["simulate", str(path), "-o", "json", "--explain", "default/second"])
    assert out.exit_code == 0, out.output
    explained = json.loads(out.output)["explain"]["default/second"]
    c = Cluster(*objs[:3], results=True)
    c.create(objs[3])
    c.settle()
    c.create(objs[4])
    c.settle()
    annotated = _annotations(c, "second")
    keys = [k for k in annotated if k not in ("result-history", "selected-node")]
    assert keys and all(explained[k] == annotated[k] for k in keys)
    assert explained["selectedNode"] == annotated["selected-node"]


def test_the_shape_cache_path_records_what_the_full_path_records() -> None:
    # the same pods on the same cluster, once through the shape cache (scores from its entry,
    # rejected nodes filtered again alone for their reasons), once filtering every node afresh
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    nodes = [make_node(f"n{i:03}", cpu=str(2 + i % 5), memory=f"{4 + i % 7}Gi") for i in range(560)]
    nodes += [make_node(f"t{i:03}", cpu="8", taints=taint) for i in range(20)]
    nodes += [make_node(f"s{i:03}", cpu="1") for i in range(20)]
    pods = [make_pod(f"p{i}", cpu="1500m", memory="1Gi") for i in range(40)]
    runs = []
    for shape_cache in (True, False):
        c = Cluster(*nodes, config={"percentageOfNodesToScore": 5}, results=True, results_node_limit=8)
        c.sched.algorithm.search.use_shape_cache = shape_cache
        for p in pods:
            c.create(p)
            c.settle()
        runs.append({p["metadata"]["name"]: _annotations(c, p["metadata"]["name"]) for p in pods})
        if shape_cache:
            assert c.sched.profiles["default-scheduler"].shape_cache.searches > 0  # it was used
    cached, fresh = runs
    for name in cached:
        a, b = cached[name], fresh[name]
        a.pop("result-history"), b.pop("result-history")
        assert a == b, name
    groups = {(g["plugin"], g["reason"]) for g in cached["p0"]["filter-result-groups"]}
    assert {("TaintToleration", ERR_TAINT), ("NodeResourcesFit", "Insufficient cpu")} <= groups


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-300, 300), min_size=1, max_size=40),
    st.integers(1, 12),
    st.data(),
    st.booleans(),
)
def test_the_listed_nodes_are_the_picked_one_then_the_best_scored_earliest_first(totals, k, data, as_float):
    """``_listed`` against a full sort: the node picked first, then the others by score (higher
    first) and position (earlier first), ``k`` in all; ties at the k-th place go to the earlier."""
    n = len(totals)
    feasible = np.array(data.draw(st.permutations(range(100, 100 + n))), np.int64)
    picked = data.draw(st.one_of(st.none(), st.sampled_from(feasible.tolist())))
    total = np.array(totals, np.float64 if as_float else np.int64)
    got = _listed(feasible, total, picked, k).tolist()
    order = sorted(range(n), key=lambda i: (feasible[i] != picked, -totals[i], i))
    assert got == order[:k]


def test_every_door_lists_the_recorders_number_of_nodes_by_default():
    """``--results-node-limit`` of up and scheduler, and the embedded cluster's, default to the
    recorder's one ``NODE_LIMIT``."""
    import inspect

    from kubesched.embedded.cluster import EmbeddedCluster
    from kubesched.scheduler.resultstore import NODE_LIMIT

    for command in ("up", "scheduler"):
        option = next(p for p in main.commands[command].params if p.name == "results_node_limit")
        assert option.default == NODE_LIMIT
    assert inspect.signature(EmbeddedCluster).parameters["results_node_limit"].default == NODE_LIMIT
