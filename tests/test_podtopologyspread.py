"""PodTopologySpread: filter verdicts and reasons, exact raw and normalized scores, minDomains,
node inclusion policies, matchLabelKeys, default constraints (tables after upstream's
``podtopologyspread/filtering_test.go`` and ``scoring_test.go``), and end-to-end spreading."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import make_node, make_pod, make_priority_class, make_waiting_nominated
from kubesched.errors import InputError
from kubesched.scheduler.plugins.podtopologyspread.common import parse_args
from kubesched.testing import Cluster

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"
SKEW = "node(s) didn't match pod topology spread constraints"


def node(name: str, zone: str | None = None, **kw: Any) -> dict[str, Any]:
    labels = {HOST: name, **({ZONE: zone} if zone else {}), **kw.pop("labels", {})}
    return make_node(name, labels=labels, **kw)


def foo(name: str, on: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    p = make_pod(name, node=on, ns=ns)
    p["metadata"]["labels"] = {"foo": "", **labels}
    return p


def on(**counts: int) -> list[dict[str, Any]]:
    """``on(a=1, y=2)``: matching pods on node-a (one) and node-y (two)."""
    return [foo(f"{n}{i}", f"node-{n}") for n, k in counts.items() for i in range(k)]


def constraint(key: str, skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    selector = extra.pop("selector", {"matchExpressions": [{"key": "foo", "operator": "Exists"}]})
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector, **extra}


def incoming(*constraints: dict[str, Any], labels: dict | None = None, **spec: Any) -> dict[str, Any]:
    p = make_pod("incoming", spec={"topologySpreadConstraints": list(constraints), **spec})
    p["metadata"]["labels"] = {"foo": ""} if labels is None else labels
    return p


FOUR_NODES = [node("node-a", "zone1"), node("node-b", "zone1"), node("node-x", "zone2"), node("node-y", "zone2")]


def run_filter(
    objects: list[dict[str, Any]], pod: dict[str, Any], config: dict | None = None, deleting: tuple[str, ...] = ()
) -> dict[str, str]:
    """The plugin's verdict per node: "" when it passes, else the reason."""
    c = Cluster(*objects, config=config)
    for name in deleting:  # graceful deletes: the pods stay, terminating
        c.store.delete("Pod", "default", name, 30)
    c.sched.process_events()
    return {n: reason for n, (_, reason) in c.filter_verdicts("PodTopologySpread", pod).items()}


SINGLE_CONSTRAINT_CASES = [
    ("no existing pods", FOUR_NODES, incoming(constraint(ZONE)), {}),
    (
        "pods in another namespace do not count",
        [*FOUR_NODES, foo("a1", "node-a", ns="ns1"), foo("a2", "node-a", ns="ns1")],
        incoming(constraint(ZONE)),
        {},
    ),
    (
        "zones 3/3: every node fits",
        [
            *FOUR_NODES,
            foo("a1", "node-a"),
            foo("b1", "node-b"),
            foo("b2", "node-b"),
            foo("x1", "node-x"),
            foo("y1", "node-y"),
            foo("y2", "node-y"),
        ],
        incoming(constraint(ZONE)),
        {},
    ),
    (
        "zones 1/3 with node-b missing the zone label",
        [
            node("node-a", "zone1"),
            node("node-b"),
            node("node-x", "zone2"),
            node("node-y", "zone2"),
            foo("a1", "node-a"),
            foo("b1", "node-b"),
            foo("x1", "node-x"),
            foo("y1", "node-y"),
            foo("y2", "node-y"),
        ],
        incoming(constraint(ZONE)),
        {"node-b": MISSING, "node-x": SKEW, "node-y": SKEW},
    ),
    ("no node has the key", FOUR_NODES, incoming(constraint("rack")), dict.fromkeys(["a", "b", "x", "y"], MISSING)),
    (
        "the incoming pod does not match its own selector: selfMatch 0",
        [*FOUR_NODES, foo("a1", "node-a")],
        incoming(constraint(ZONE), labels={"bar": ""}),
        {},
    ),
    (
        "zones 1/0: zone1 is over the skew",
        [*FOUR_NODES, foo("a1", "node-a")],
        incoming(constraint(ZONE)),
        {"node-a": SKEW, "node-b": SKEW},
    ),
    (
        "hostname: skew per node",
        [*FOUR_NODES, foo("a1", "node-a"), foo("b1", "node-b"), foo("x1", "node-x")],
        incoming(constraint(HOST)),
        {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW},
    ),
    (
        "matchLabelKeys narrows the selector to the pod's own value",
        [*FOUR_NODES, foo("a1", "node-a", app="y"), foo("b1", "node-b", app="y"), foo("x1", "node-x", app="x")],
        incoming(constraint(ZONE, matchLabelKeys=["app"]), labels={"foo": "", "app": "x"}),
        {"node-x": SKEW, "node-y": SKEW},
    ),
]


@pytest.mark.parametrize(("name", "objects", "pod", "want"), SINGLE_CONSTRAINT_CASES)
def test_single_constraint(name: str, objects: list, pod: dict, want: dict[str, str]) -> None:
    want = {(k if k.startswith("node-") else f"node-{k}"): v for k, v in want.items()}
    got = run_filter(objects, pod)
    assert got == {n: want.get(n, "") for n in got}, name


def test_terminating_pods_do_not_count() -> None:
    objects = [*FOUR_NODES, foo("a1", "node-a"), foo("a2", "node-a"), foo("x1", "node-x")]
    everyone = dict.fromkeys(["node-a", "node-b", "node-x", "node-y"], "")
    assert run_filter(objects, incoming(constraint(ZONE))) == {**everyone, "node-a": SKEW, "node-b": SKEW}
    assert run_filter(objects, incoming(constraint(ZONE)), deleting=("a2",)) == everyone


def _policy_nodes(taints: bool = False) -> list[dict[str, Any]]:
    """Four nodes in two zones; node-y off the pod's nodeSelector pool, or tainted."""
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    return [
        node(n, z, labels={"pool": "a"} if n != "node-y" else {}, taints=taint if taints and n == "node-y" else None)
        for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))
    ]


_POLICY_PODS = [foo("a1", "node-a"), foo("x1", "node-x")] + [foo(f"y{i}", "node-y") for i in range(3)]

# (name, objects, pod, the verdicts of the nodes the case is about): minDomains and the node
# inclusion policies
POLICY_CASES = [
    # zone1 holds 1 matching pod, zone2 2: the global minimum is 1, or 0 with fewer domains (2)
    # than minDomains (3)
    (
        "minDomains unset",
        [*FOUR_NODES, foo("a1", "node-a"), foo("x1", "node-x"), foo("y1", "node-y")],
        incoming(constraint(ZONE)),
        {"node-a": "", "node-b": "", "node-x": SKEW, "node-y": SKEW},
    ),
    (
        "minDomains 3 over 2 domains",
        [*FOUR_NODES, foo("a1", "node-a"), foo("x1", "node-x"), foo("y1", "node-y")],
        incoming(constraint(ZONE, minDomains=3)),
        {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW, "node-y": SKEW},
    ),
    # node-y does not match the pod's nodeSelector (or is tainted): with Honor its 3 pods do not count
    *(
        (
            f"nodeAffinityPolicy {policy}",
            [*_policy_nodes(), *_POLICY_PODS],
            incoming(constraint(ZONE, nodeAffinityPolicy=policy), nodeSelector={"pool": "a"}),
            {"node-x": want_x},
        )
        for policy, want_x in (("Honor", ""), ("Ignore", SKEW))
    ),
    *(
        (
            f"nodeTaintsPolicy {policy}",
            [*_policy_nodes(taints=True), *_POLICY_PODS],
            incoming(constraint(ZONE, nodeTaintsPolicy=policy)),
            {"node-x": want_x},
        )
        for policy, want_x in (("Honor", ""), ("Ignore", SKEW))
    ),
]


@pytest.mark.parametrize(("name", "objects", "pod", "want"), POLICY_CASES)
def test_min_domains_and_inclusion_policies(name: str, objects: list, pod: dict, want: dict[str, str]) -> None:
    got = run_filter(objects, pod)
    assert {n: got[n] for n in want} == want, name


def run_score(objects: list[dict[str, Any]], pod: dict[str, Any], config: dict | None = None) -> tuple | None:
    """(raw, normalized) scores of every node, all feasible; None when PreScore skips."""
    return Cluster(*objects, config=config).plugin_scores("PodTopologySpread", pod)


# (name, objects, pod, raw, normalized): scoring_test.go's shape
SCORE_CASES = [
    (
        # 4 candidates: weight ln(6) = 1.79; counts 0/1/2/3 → raw 0/2/4/5 → 100·(5+0−s)/5
        "hostname constraint",
        [*FOUR_NODES, foo("b1", "node-b")] + [foo(f"x{i}", "node-x") for i in range(2)] + on(y=3),
        incoming(constraint(HOST, when="ScheduleAnyway")),
        {"node-a": 0, "node-b": 2, "node-x": 4, "node-y": 5},
        {"node-a": 100, "node-b": 60, "node-x": 20, "node-y": 0},
    ),
    (
        # 2 domains: weight ln(4) = 1.386; zone1 3 pods, zone2 1; maxSkew 2 adds 1 to each node:
        # round(3·1.386+1), round(1.386+1), normalized 100·(5+2−s)/5
        "zone constraint with maxSkew 2",
        [*FOUR_NODES, foo("a1", "node-a"), foo("a2", "node-a"), foo("b1", "node-b"), foo("y1", "node-y")],
        incoming(constraint(ZONE, skew=2, when="ScheduleAnyway")),
        {"node-a": 5, "node-b": 5, "node-x": 2, "node-y": 2},
        {"node-a": 40, "node-b": 40, "node-x": 100, "node-y": 100},
    ),
]


@pytest.mark.parametrize(("name", "objects", "pod", "raw", "norm"), SCORE_CASES)
def test_score(name: str, objects: list, pod: dict, raw: dict, norm: dict) -> None:
    assert run_score(objects, pod) == (raw, norm), name


def test_score_ignores_nodes_missing_a_key() -> None:
    objects = [node("node-a", "zone1"), node("node-b"), node("node-x", "zone2"), foo("a1", "node-a")]
    raw, norm = run_score(objects, incoming(constraint(ZONE, when="ScheduleAnyway")))
    assert raw["node-b"] == 0 and norm["node-b"] == 0
    assert norm == {"node-a": 0, "node-b": 0, "node-x": 100}  # raw 1 and 0 → 100·(1+0−s)/1


def test_score_all_zero_counts_gives_100() -> None:
    raw, norm = run_score(FOUR_NODES, incoming(constraint(ZONE, when="ScheduleAnyway")))
    assert set(raw.values()) == {0} and set(norm.values()) == {100}


def service(selector: dict[str, str], name: str = "svc") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector},
    }


def test_system_default_constraints_follow_services() -> None:
    # a pod selected by a Service gets hostname (maxSkew 3) and zone (maxSkew 5) ScheduleAnyway.
    objects = [*FOUR_NODES, service({"app": "web"})] + [
        {
            **make_pod(f"w{i}", node="node-a"),
            "metadata": {"name": f"w{i}", "namespace": "default", "uid": f"w{i}", "labels": {"app": "web"}},
        }
        for i in range(2)
    ]
    pod = make_pod("web")
    pod["metadata"]["labels"] = {"app": "web"}
    raw, _norm = run_score(objects, pod)
    # hostname: ln(4+2)=1.79 per pod, +2; zone: ln(2+2)=1.386 per pod, +4
    assert raw == {
        "node-a": round(2 * 1.7918 + 2 + 2 * 1.3863 + 4),
        "node-b": round(2 + 2 * 1.3863 + 4),
        "node-x": 6,
        "node-y": 6,
    }
    alone = make_pod("alone")
    alone["metadata"]["labels"] = {"app": "other"}
    assert run_score(objects, alone) is None  # nothing selects it: no default constraints


def test_list_defaulting_uses_the_args() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
    }
    config = {"profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": args}]}]}
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    owned = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True, "uid": "x"}]
    pods = []
    for i, n in enumerate(["node-a", "node-b"]):
        p = make_pod(f"w{i}", node=n)
        p["metadata"].update(labels={"app": "web"}, ownerReferences=owned)
        pods.append(p)
    pod = make_pod("web")
    pod["metadata"].update(labels={"app": "web"}, ownerReferences=owned)
    got = run_filter([*FOUR_NODES, rs, *pods], pod, config)
    assert got == {"node-a": SKEW, "node-b": SKEW, "node-x": "", "node-y": ""}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"defaultingType": "Sometimes"}, "defaultingType"),
        (
            {"defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
            "defaultConstraints",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}],
            },
            "defaultConstraints[0].maxSkew",
        ),
    ],
)
def test_invalid_args(args: dict, field: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_args(args)
    assert exc.value.field == field


def test_replicas_spread_evenly_over_zones() -> None:
    nodes = [node(f"{z}-{i}", z) for z in ("z1", "z2", "z3") for i in range(2)]
    c = Cluster(*nodes)
    for i in range(9):
        p = incoming(constraint(ZONE))
        p["metadata"].update(name=f"r{i}", uid=f"r{i}")
        c.create(p)
    c.settle()
    zones = [c.node_of(f"r{i}").split("-")[0] for i in range(9)]
    assert sorted(zones) == ["z1"] * 3 + ["z2"] * 3 + ["z3"] * 3


def test_pod_left_over_gets_the_spread_message() -> None:
    c = Cluster(node("n1", "z1"), node("n2", "z2", cpu="1"))
    for i in range(4):
        p = incoming(constraint(ZONE))
        p["metadata"].update(name=f"r{i}", uid=f"r{i}")
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
        c.create(p)
        c.settle()
    assert c.node_of("r3") is None
    assert c.sched.last_message["default/r3"] == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread constraints. "
        ""
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_nominated_pods_count_toward_the_skew() -> None:
    # AddPod: a higher-priority matching pod nominated to node-a (waiting there) makes zone1 hold
    # one more pod than zone2 for the second filter pass.
    waiting = make_waiting_nominated("waiting", "node-a", labels={"foo": ""})
    c = Cluster(*FOUR_NODES, make_priority_class("never100", 100, preemptionPolicy="Never"), waiting)
    c.settle()
    # (Ignore: the nodeSelector pinning node-a must not shrink the counted domains to zone1)
    pod = incoming(constraint(ZONE, nodeAffinityPolicy="Ignore"), nodeSelector={HOST: "node-a"})
    c.create(pod)
    c.settle()
    assert c.node_of("incoming") is None
    assert c.sched.last_message["default/incoming"].startswith(
        "0/4 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
    )


def test_a_service_created_later_brings_the_default_constraints() -> None:
    pod = make_pod("web")
    pod["metadata"]["labels"] = {"app": "web"}
    c = Cluster(*FOUR_NODES)
    assert c.plugin_scores("PodTopologySpread", pod) is None
    c.create(service({"app": "web"}))
    c.sched.process_events()
    assert c.plugin_scores("PodTopologySpread", pod) is not None
    c.store.delete("Service", "default", "svc")
    c.sched.process_events()
    assert c.plugin_scores("PodTopologySpread", pod) is None
