"""Workload-aware (gang) scheduling, GenericWorkload (beta, off by default in v1.37): PodGroups
queue and schedule as one (``schedule_one_podgroup.go``), GangScheduling holds members back until
``minCount`` exist, places all or none of a gang, and lets the placed ones bind together.

Upstream-style tables: each case is a cluster (nodes, PodGroups, pods) that ``kubesched simulate``
and kube-scheduler v1.37.2's scheduler (the oracle, every pending pod created at once with
``--together``) both run; each pod's node (where the case fixes it) or its last FailedScheduling
message, the PreEnqueue plugin holding it back, and its PodGroup's ``PodGroupInitiallyScheduled``
condition must be the table's and upstream's."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers import make_node, make_pod, make_priority_class
from tests.oracle import upstream
from tests.upstream import binaries

from kubesched.features import FeatureGates
from kubesched.simulate.runner import simulate
from kubesched.testing import Cluster

GATES = "GenericWorkload=true"
NO_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
ANY = "*"  # bound, to whichever node


def pod_group(name: str, min_count: int | None = None, **spec: Any) -> dict[str, Any]:
    """A scheduling.k8s.io/v1beta1 PodGroup: a gang of ``min_count``, or basic with None."""
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": policy, **spec},
    }


def member(name: str, group: str, cpu: str = "1", **kwargs: Any) -> dict[str, Any]:
    pod = make_pod(name, cpu=cpu, **kwargs)
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


def nodes(n: int, cpu: str = "1") -> list[dict[str, Any]]:
    return [make_node(f"n{i}", cpu=cpu) for i in range(1, n + 1)]


def gang_message(min_count: int, scheduled: int, remaining: int, verb: str = "cannot be satisfied") -> str:
    return f"minCount ({min_count}) {verb}: {scheduled} scheduled, {remaining} remaining, {NO_VICTIMS}"


# (nodes, objects, {pod: node, ANY, the last FailedScheduling message, ("gated", message), or
#  ("then", its first FailedScheduling message, what it ends with)},
#  {pod group: (status, reason, message) of PodGroupInitiallyScheduled, or None},
#  the pods preempted)
GANG_CASES = [
    pytest.param(
        nodes(2),
        [pod_group("g", 3), member("a", "g"), member("b", "g"), member("c", "g")],
        {
            "a": f"pod group is unschedulable, {gang_message(3, 2, 0)}",
            "b": f"pod group is unschedulable, {gang_message(3, 2, 0)}",
            "c": "0/2 nodes are available: 2 Insufficient cpu.",
        },
        {"g": ("False", "Unschedulable", gang_message(3, 2, 0))},
        [],
        id="gang of 3 on 2 nodes: none placed",
    ),
    pytest.param(
        nodes(3),
        [pod_group("g", 3), member("a", "g"), member("b", "g"), member("c", "g")],
        {"a": ANY, "b": ANY, "c": ANY},
        {"g": ("True", "Scheduled", "")},
        [],
        id="gang of 3 on 3 nodes: all placed",
    ),
    pytest.param(
        nodes(2),
        [pod_group("g", 2), member("a", "g"), member("b", "g"), member("c", "g")],
        {"a": ANY, "b": ANY, "c": "0/2 nodes are available: 2 Insufficient cpu."},
        {"g": ("True", "Scheduled", "")},
        [],
        id="minCount 2 of 3: two placed, the third pending",
    ),
    pytest.param(
        nodes(2),
        [pod_group("g", 3), member("a", "g"), member("b", "g")],
        {
            "a": ("gated", "GangScheduling: waiting for minCount pods from a gang to appear in scheduling queue"),
            "b": ("gated", "GangScheduling: waiting for minCount pods from a gang to appear in scheduling queue"),
        },
        {"g": None},
        [],
        id="fewer pods than minCount: held back at PreEnqueue",
    ),
    pytest.param(
        nodes(2),
        [member("a", "missing"), member("b", "missing")],
        {"a": None, "b": None},
        {},
        [],
        id="no PodGroup object: the pods wait for it",
    ),
    pytest.param(
        nodes(1),
        [pod_group("g"), member("a", "g"), member("b", "g")],
        {"a": ANY, "b": "0/1 nodes are available: 1 Insufficient cpu."},
        {"g": ("True", "Scheduled", "")},
        [],
        id="basic policy: each pod on its own",
    ),
    pytest.param(
        nodes(1, cpu="4"),
        [
            make_priority_class("high", 100),
            pod_group("g", 2),
            member("a", "g"),
            member("b", "g", priority_class="high"),
        ],
        {
            "a": "all pods in a single pod group should have the same priority as the pod group's priority, "
            "got 100 and 0",
            "b": "all pods in a single pod group should have the same priority as the pod group's priority, "
            "got 100 and 0",
        },
        {
            "g": (
                "False",
                "SchedulerError",
                "all pods in a single pod group should have the same priority as the pod group's priority, "
                "got 100 and 0",
            )
        },
        [],
        id="members of another priority than the group: SchedulerError",
    ),
    pytest.param(
        nodes(2),
        [
            make_priority_class("high", 100),
            make_pod("low1", cpu="1", node="n1"),
            make_pod("low2", cpu="500m", node="n2"),
            pod_group("g", 2, priorityClassName="high"),
            member("a", "g", priority_class="high"),
            member("b", "g", priority_class="high"),
        ],
        {
            "a": ("then", "0/2 nodes are available: 2 Insufficient cpu.", ANY),
            "b": ("then", "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining", ANY),
        },
        {"g": ("True", "Scheduled", "")},
        ["default/low1", "default/low2"],
        id="a gang of higher priority preempts what it needs",
    ),
    pytest.param(
        nodes(2),
        [
            make_priority_class("high", 100),
            make_pod("low1", cpu="1", node="n1"),
            make_pod("keep", cpu="500m", node="n2", priority_class="high"),
            pod_group("g", 2, priorityClassName="high"),
            member("a", "g", priority_class="high"),
            member("b", "g", priority_class="high"),
        ],
        {
            "a": "0/2 nodes are available: 2 Insufficient cpu.",
            "b": "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining",
        },
        {
            "g": (
                "False",
                "Unschedulable",
                "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
                "deallocation and deletion of ResourceClaims completed, "
                "pod group preemption: minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
            )
        },
        [],
        id="preemption that cannot place the whole gang evicts nothing",
    ),
    pytest.param(
        nodes(2),
        [
            make_priority_class("high", 100),
            pod_group("low", 2, disruptionMode={"all": {}}),
            member("low-0", "low", node="n1"),
            member("low-1", "low", cpu="500m", node="n2"),
            pod_group("g", 1, priorityClassName="high"),
            member("a", "g", priority_class="high"),
        ],
        {"a": ("then", "0/2 nodes are available: 2 Insufficient cpu.", ANY)},
        {"g": ("True", "Scheduled", "")},
        ["default/low-0", "default/low-1"],
        id="a PodGroup with disruptionMode all is evicted whole",
    ),
]


def _write(tmp_path: Path, name: str, objects: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"{name}.yaml"
    docs = []
    for o in copy.deepcopy(objects):
        o.setdefault("apiVersion", "v1")
        if o["kind"] == "Node":
            o["metadata"].setdefault("labels", {})["kubernetes.io/hostname"] = o["metadata"]["name"]
        for c in (o.get("spec") or {}).get("containers") or []:
            c.setdefault("image", "pause")
        docs.append(o)
    path.write_text(yaml.safe_dump_all(docs, default_style='"'))
    return path


def mine(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any], list[str]]:
    """kubesched's outcome per pod (node, messages, PreEnqueue plugin holding it), per PodGroup
    (its condition), and the pods preempted."""
    result = simulate([str(path)], feature_gates=FeatureGates.parse(GATES))
    pods: dict[str, dict[str, Any]] = {}
    for p in result.pods:
        messages = [
            e["message"]
            for e in result.events
            if e["reason"] == "FailedScheduling" and (e["namespace"], e["name"]) == (p["namespace"], p["name"])
        ]
        gated = p["message"] if p["reason"] == "PreEnqueue" else None
        pods[p["name"]] = {
            "node": p["nodeName"],
            "message": messages[-1] if messages else None,
            "messages": messages,
            "gated": gated,
        }
    groups = {g["name"]: g["condition"] for g in result.pod_groups}
    victims = sorted(
        f"{d['namespace']}/{d['name']}" for d in result.deleted_pods if d.get("reason") == "PreemptionByScheduler"
    )
    return pods, groups, victims


def check(outcome: dict[str, Any], expected: Any, who: str) -> None:
    if isinstance(expected, tuple) and expected[0] == "then":
        assert (outcome.get("messages") or [None])[0] == expected[1], f"{who}: {outcome}"
        check(outcome, expected[2], who)
    elif expected == ANY:
        assert outcome["node"], f"{who}: left pending ({outcome})"
    elif isinstance(expected, tuple):
        assert not outcome["node"] and outcome.get("gated") == expected[1], f"{who}: {outcome}"
    elif expected is None:
        assert not outcome["node"] and not outcome.get("message") and not outcome.get("gated"), f"{who}: {outcome}"
    elif expected.startswith("n") and " " not in expected:
        assert outcome["node"] == expected, f"{who}: {outcome}"
    else:
        assert not outcome["node"] and outcome.get("message") == expected, f"{who}: {outcome}"


@pytest.mark.parametrize("node_objs, objects, pods, groups, victims", GANG_CASES)
def test_gang_table(tmp_path, node_objs, objects, pods, groups, victims):
    """The table's answer is kubesched's."""
    path = _write(tmp_path, "case", node_objs + objects)
    got_pods, got_groups, got_victims = mine(path)
    assert got_victims == victims
    for name, expected in pods.items():
        check(got_pods[name], expected, f"kubesched {name}")
    for name, expected in groups.items():
        got = got_groups.get(name)
        assert (tuple(got.values()) if got else None) == expected, f"kubesched PodGroup {name}: {got}"


def test_gang_table_is_upstreams(tmp_path):
    """The table's answer is upstream's: every case through kube-scheduler v1.37.2's scheduler."""
    cases = [c.values for c in GANG_CASES]
    paths = [_write(tmp_path, f"case-{i}", n + o) for i, (n, o, *_) in enumerate(cases)]
    theirs = upstream(binaries() / "oracle", paths, gates=GATES, together=True)
    for (case, (_, _, pods, groups, victims)), outcome in zip(zip(GANG_CASES, cases, strict=True), theirs, strict=True):
        by_pod = {r["pod"].split("/")[1]: r for r in outcome}
        assert (outcome[0].get("victims") or []) == victims, f"upstream {case.id}: {outcome[0].get('victims')}"
        for name, expected in pods.items():
            r = by_pod[name]
            got = {
                "node": r.get("node"),
                "message": r.get("message"),
                "messages": r.get("messages") or [],
                "gated": r.get("gated") or None,
            }
            check(got, expected, f"upstream {case.id} {name}")
        for name, expected in groups.items():
            conditions = {r["podGroup"]["message"]: r["podGroup"] for r in outcome if r.get("podGroup")}
            got = next(iter(conditions.values()), None) if conditions else None
            assert (tuple(got.values()) if got else None) == expected, f"upstream {case.id} PodGroup {name}: {got}"


def test_gang_binds_once_its_third_node_appears():
    """A gang of 3 where 2 fit stays pending, all three bind once a third node appears and the
    group's backoff has passed (a rejected pod group backs off and retries, upstream's
    AddAttemptedPodGroupIfNeeded)."""
    c = Cluster(*nodes(2), config={"featureGates": {"GenericWorkload": True}})
    c.create(pod_group("g", 3), member("a", "g"), member("b", "g"), member("c", "g"))
    c.settle()
    assert [c.node_of(n) for n in "abc"] == [None, None, None]
    c.create(make_node("n3", cpu="1"))
    c.settle()
    assert [c.node_of(n) for n in "abc"] == [None, None, None]  # still backing off
    c.advance(2)
    assert sorted(c.node_of(n) or "" for n in "abc") == ["n1", "n2", "n3"]
    condition = c.store.get("PodGroup", "default", "g")["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodGroupInitiallyScheduled",
        "True",
        "Scheduled",
    )
    assert c.sched.metrics.pod_group_attempts.series[("unschedulable", "default-scheduler")] == 1
    assert c.sched.metrics.pod_group_attempts.series[("scheduled", "default-scheduler")] == 1


def test_gang_members_arriving_one_by_one_wait_for_min_count():
    """Members created one at a time are held back (GangScheduling's PreEnqueue) until the third
    arrives; the PodGroup created last lets them in."""
    c = Cluster(*nodes(3), config={"featureGates": {"GenericWorkload": True}})
    c.create(member("a", "g"))
    c.settle()
    c.create(pod_group("g", 3), member("b", "g"))
    c.settle()
    assert c.sched.queue.where(c.store.get("Pod", "default", "a")["metadata"]["uid"]) == "gated"
    c.create(member("c", "g"))
    c.settle()
    assert sorted(c.node_of(n) or "" for n in "abc") == ["n1", "n2", "n3"]


def test_without_the_gate_pod_groups_are_ignored():
    """GenericWorkload off (v1.37's default): schedulingGroup changes nothing, pods go one by one."""
    c = Cluster(*nodes(2))
    c.create(pod_group("g", 3), member("a", "g"), member("b", "g"), member("c", "g"))
    c.settle()
    assert sum(bool(c.node_of(n)) for n in "abc") == 2
    assert "status" not in c.store.get("PodGroup", "default", "g")


def test_gang_scheduling_joins_the_default_profile_with_the_gate():
    from kubesched.scheduler.config import default_config
    from kubesched.scheduler.profile import build_profiles

    config = default_config()
    config.feature_gates = FeatureGates.parse(GATES)
    fwk = build_profiles(config)["default-scheduler"]
    assert [p.name for p in fwk.permit] == ["GangScheduling"]
    assert [p.name for p in fwk.pre_enqueue][-1] == "GangScheduling"
    assert [p.name for p in fwk.placement_feasible] == ["GangScheduling"]
    assert "GangScheduling" not in [p.name for p in build_profiles(default_config())["default-scheduler"].permit]


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gang"


def test_the_gang_example_waits_for_its_third_node():
    """examples/gang: three 8-GPU workers on two 8-GPU nodes stay pending together; with the
    third node all three bind, one per node."""
    gates = FeatureGates.parse(GATES)
    files = [str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "training.yaml")]
    two = simulate(files, feature_gates=gates)
    assert [p["nodeName"] for p in two.pods] == [None, None, None]
    assert two.pod_groups == [
        {
            "namespace": "ml",
            "name": "trainer",
            "minCount": 3,
            "pods": 3,
            "bound": 0,
            "condition": {
                "status": "False",
                "reason": "Unschedulable",
                "message": gang_message(3, 2, 0),
            },
        }
    ]
    three = simulate([*files, str(EXAMPLE / "third-node.yaml")], feature_gates=gates)
    assert sorted(p["nodeName"] for p in three.pods) == ["gpu-1", "gpu-2", "gpu-3"]
    assert three.pod_groups[0]["condition"] == {"status": "True", "reason": "Scheduled", "message": ""}


def test_size_counts_a_gang_whole():
    """``kubesched size`` with GenericWorkload: one node fewer than the gang needs leaves all three
    workers pending, each with the gang's message or its own."""
    from click.testing import CliRunner

    from kubesched.cli import main

    args = ["size", str(EXAMPLE / "training.yaml"), "--node-template", str(EXAMPLE / "third-node.yaml")]
    out = CliRunner().invoke(main, [*args, "--feature-gates", GATES, "-o", "json"])
    assert out.exit_code == 0, out.output
    (result,) = json.loads(out.output)["options"]
    assert result["nodes"] == 3
    assert [p["name"] for p in result["pendingWithOneFewer"]] == ["trainer-0", "trainer-1", "trainer-2"]
    alone = CliRunner().invoke(main, [*args, "-o", "json"])
    assert len(json.loads(alone.output)["options"][0]["pendingWithOneFewer"]) == 1


def test_a_pod_group_deleted_and_made_again():
    """Deleting a PodGroup sends its waiting pods back to wait for it (upstream's incomplete pods);
    made again, with a smaller minCount, it lets them through; a member deleted meanwhile is gone
    from the group."""
    c = Cluster(*nodes(2), config={"featureGates": {"GenericWorkload": True}})
    c.create(pod_group("g", 3), member("a", "g"), member("b", "g"), member("c", "g"))
    c.settle()
    assert [c.node_of(n) for n in "abc"] == [None, None, None]
    c.store.delete("PodGroup", "default", "g")
    c.store.delete("Pod", "default", "c", 0)
    c.settle()
    assert c.sched.queue.where(c.store.get("Pod", "default", "a")["metadata"]["uid"]) == "incomplete"
    c.create(pod_group("g", 2))
    c.settle()
    assert sorted(c.node_of(n) or "" for n in "ab") == ["n1", "n2"]
    assert c.sched.queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_members_of_two_profiles_are_a_scheduler_error():
    """A group whose pods name different schedulers cannot be scheduled as one (validatePodGroup):
    each pod gets the error, and the scheduler goes on with the next pod."""
    config = {
        "featureGates": {"GenericWorkload": True},
        "profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "other"}],
    }
    c = Cluster(*nodes(2), config=config)
    b = member("b", "g")
    b["spec"]["schedulerName"] = "other"
    c.create(pod_group("g", 2), member("a", "g"), b, make_pod("plain", cpu="1"))
    c.settle()
    assert c.node_of("plain") is not None
    messages = c.events("FailedScheduling")
    assert any("should have the same .spec.schedulerName set" in m for m in messages), messages


WORKLOAD = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "training", "namespace": "default"},
    "spec": {
        "podGroupTemplates": [
            {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}},
            {"name": "driver", "schedulingPolicy": {"basic": {}}},
        ]
    },
}


NINE_TEMPLATES = [{"name": f"t{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        pytest.param(lambda w: None, None, id="valid"),
        pytest.param(
            lambda w: w["spec"]["podGroupTemplates"][1].update(name="workers"),
            'spec.podGroupTemplates[1]: Duplicate value: {"name":"workers","schedulingPolicy":{"basic":{}},'
            '"schedulingConstraints":null}',
            id="duplicate name",
        ),
        pytest.param(
            lambda w: w["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"].update(minCount=-1),
            "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than or "
            "equal to 1",
            id="minCount -1",
        ),
        pytest.param(
            lambda w: w["spec"]["podGroupTemplates"][1]["schedulingPolicy"].update(gang={"minCount": 1}),
            'spec.podGroupTemplates[1].schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly one '
            "of: `basic`, `gang`",
            id="both policies",
        ),
        pytest.param(
            lambda w: w["spec"].update(podGroupTemplates=NINE_TEMPLATES),
            "spec.podGroupTemplates: Too many: 9: must have at most 8 items",
            id="nine templates",
        ),
    ],
)
def test_workloads_are_validated(mutate, message):
    """scheduling.k8s.io/v1beta1 Workload through the embedded API's validation (the API server
    and simulate share it): what kube-apiserver v1.37 refuses, with its field path and wording."""
    from kubesched.cluster.validation import validate
    from kubesched.errors import InputError

    workload = copy.deepcopy(WORKLOAD)
    mutate(workload)
    if message is None:
        validate("Workload", workload)
        return
    with pytest.raises(InputError) as err:
        validate("Workload", workload)
    assert f"{err.value.field}: {err.value.message}" == message


@st.composite
def gang_clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[str, int, list[str]]]]:
    """Nodes of 1-4 CPUs, and gangs (minCount up to their size) and loose pods of 1-2 CPUs."""
    cluster = [make_node(f"n{i}", cpu=str(draw(st.integers(1, 4)))) for i in range(draw(st.integers(1, 4)))]
    gangs = []
    for g in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 4))
        min_count = draw(st.integers(1, size))
        names = [f"g{g}-{i}" for i in range(size)]
        cluster.append(pod_group(f"g{g}", min_count))
        cpu = str(draw(st.integers(1, 2)))
        cluster += [member(n, f"g{g}", cpu=cpu) for n in names]
        gangs.append((f"g{g}", min_count, names))
    cluster += [make_pod(f"loose-{i}", cpu="1") for i in range(draw(st.integers(0, 3)))]
    return cluster, gangs


@settings(max_examples=40, deadline=None)
@given(gang_clusters())
def test_gangs_are_all_or_nothing(case):
    """Whatever the cluster: a gang has at least minCount pods bound or none (never a part
    below its quorum), no node holds more than it can, and the group's condition says which."""
    objects, gangs = case
    c = Cluster(config={"featureGates": {"GenericWorkload": True}})
    c.create(*objects)
    c.settle()
    c.advance(30)  # the rejected groups' retries
    for name, min_count, pods in gangs:
        bound = sum(1 for p in pods if c.node_of(p))
        assert bound == 0 or bound >= min_count, (name, bound, min_count)
        status = ((c.store.get("PodGroup", "default", name).get("status") or {}).get("conditions") or [{}])[0]
        assert (status.get("status") == "True") == (bound >= min_count), (name, status)
    used: dict[str, int] = {}
    for obj in c.store.list("Pod")[0]:
        node = obj["spec"].get("nodeName")
        if node:
            cpu = obj["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            used[node] = used.get(node, 0) + int(cpu)
    for node in c.store.list("Node")[0]:
        assert used.get(node["metadata"]["name"], 0) <= int(node["status"]["allocatable"]["cpu"])


def test_the_ui_queue_shows_where_members_wait():
    """The web UI's queue view: members held by GangScheduling's PreEnqueue and members whose
    PodGroup does not exist yet are listed as gated, each with its group and what holds it."""
    from kubesched.ui.views import queue_view

    c = Cluster(*nodes(2), config={"featureGates": {"GenericWorkload": True}})
    c.create(pod_group("g", 3), member("a", "g"), member("b", "g"), member("x", "later"))
    c.settle()
    view = queue_view(c.sched)
    gated = {e["name"]: (e["podGroup"], e["gatingPlugin"]) for e in view["gated"]}
    assert gated == {"a": ("g", "GangScheduling"), "b": ("g", "GangScheduling"), "x": ("later", "<its PodGroup>")}
    assert view["activeQ"] == view["backoffQ"] == []


def test_explain_shows_a_gang_pods_attempts():
    """``simulate --explain`` of a gang's pod: its Filter verdicts per node in the group's cycle,
    as for a pod's own cycle (the UI and ``kubesched explain`` read the same results)."""
    from kubesched.simulate.output import explain_dict

    with_results = simulate(
        [str(EXAMPLE / "cluster.yaml"), str(EXAMPLE / "training.yaml")],
        feature_gates=FeatureGates.parse(GATES),
        explain=["ml/trainer-2"],
    )
    (attempt,) = with_results.explain["ml/trainer-2"]
    verdicts = explain_dict(attempt)["filter-result"]
    assert sorted(verdicts) == ["gpu-1", "gpu-2"]  # its turn came after trainer-0 and -1 took both nodes
    assert {v["NodeResourcesFit"] for v in verdicts.values()} == {"Insufficient nvidia.com/gpu"}
    assert all(p == "passed" for v in verdicts.values() for name, p in v.items() if name != "NodeResourcesFit")


@st.composite
def preempting_gangs(draw):
    """Nodes of 2 CPUs full of lower-priority pods (some in a PodGroup evicted whole, some under
    a budget), some with a zone-wide anti-affinity that couples nodes, and a gang of higher
    priority that fits only by preempting."""
    n = draw(st.integers(2, 5))
    cluster: list[dict[str, Any]] = [make_priority_class("high", 100), make_priority_class("mid", 50)]
    for i in range(1, n + 1):
        node = make_node(f"n{i}", cpu="2")
        node["metadata"]["labels"] = {"zone": f"z{i % 2}"}
        cluster.append(node)
    if draw(st.booleans()):
        cluster += [pod_group("whole", 2, disruptionMode={"all": {}})]
        cluster += [member(f"whole-{k}", "whole", cpu="500m", node=f"n{k + 1}") for k in range(2)]
    if draw(st.booleans()):
        budget = {"minAvailable": 1, "selector": {"matchLabels": {"app": "kept"}}}
        cluster.append(
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}, "spec": budget}
        )
    for i in range(1, n + 1):
        for k in range(draw(st.integers(1, 3))):
            low = make_pod(f"low-{i}-{k}", cpu=draw(st.sampled_from(["300m", "500m", "700m"])), node=f"n{i}")
            if draw(st.booleans()):
                low["spec"]["priorityClassName"] = "mid"
                del low["spec"]["priority"]
            if draw(st.booleans()):
                low["metadata"]["labels"] = {"app": "kept"}
            cluster.append(low)
    size = draw(st.integers(1, 3))
    cluster.append(pod_group("g", size, priorityClassName="high"))
    anti = draw(st.booleans())
    for k in range(size):
        m = member(f"g-{k}", "g", cpu=draw(st.sampled_from(["1", "1500m"])), priority_class="high")
        m["metadata"]["labels"] = {"gang": "g"}
        if anti:  # no two members in a zone: a victim put back elsewhere can matter
            term = {"labelSelector": {"matchLabels": {"gang": "g"}}, "topologyKey": "zone"}
            m["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        cluster.append(m)
    return cluster


@settings(max_examples=30, deadline=None)
@given(case=preempting_gangs())
def test_reprieving_on_the_victims_nodes_only_is_the_whole_check(tmp_path_factory, case):
    """The reprieve that checks only the placed pods on a victim's own nodes (where no verdict
    reads other nodes) evicts the same victims and places the gang where the full check of every
    placed pod for every victim does."""
    from kubesched.scheduler.preemption.podgroup import PodGroupEvaluator

    path = _write(tmp_path_factory.mktemp("reprieve"), "case", case)
    fast = mine(path)
    real = PodGroupEvaluator._node_local
    PodGroupEvaluator._node_local = lambda self, placed: False  # type: ignore[method-assign]
    try:
        whole = mine(path)
    finally:
        PodGroupEvaluator._node_local = real  # type: ignore[method-assign]
    assert fast == whole
