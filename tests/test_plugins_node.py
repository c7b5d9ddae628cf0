"""Tables for TaintToleration, NodeAffinity, NodeUnschedulable, NodeName, NodePorts, ImageLocality."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import make_node, make_pod, pod, table
from kubesched.api.pod import pod_info_from
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.scheduler.plugins.imagelocality import ImageLocality
from kubesched.scheduler.plugins.nodeaffinity import NodeAffinity
from kubesched.scheduler.plugins.nodename import NodeName
from kubesched.scheduler.plugins.nodeports import NodePorts
from kubesched.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.scheduler.plugins.tainttoleration import TaintToleration


def taint(key, value, effect):
    return {"key": key, "value": value, "effect": effect}


def tol(key, value="", effect="", op="Equal"):
    return {"key": key, "value": value, "effect": effect, "operator": op}


TAINT_FILTER_CASES = [
    ([], [taint("dedicated", "user1", "NoSchedule")], False),
    ([tol("dedicated", "user2", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")], False),
    ([tol("foo", effect="NoSchedule", op="Exists")], [taint("foo", "bar", "NoSchedule")], True),
    ([tol("foo", "bar", "PreferNoSchedule")], [taint("foo", "bar", "NoSchedule")], False),
    ([tol("foo", "bar")], [taint("foo", "bar", "NoSchedule")], True),
    ([], [taint("foo", "bar", "PreferNoSchedule")], True),
]


@pytest.mark.parametrize(("tolerations", "taints", "fits"), TAINT_FILTER_CASES)
def test_taint_toleration_filter(tolerations, taints, fits) -> None:
    t = table([make_node("n", taints=taints)])
    v = TaintToleration().filter_nodes(CycleState(), pod("p", spec={"tolerations": tolerations}), t)
    if fits:
        assert v is None or int(v.code[0]) == 0
    else:
        assert int(v.code[0]) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert v.describe(v.reason_at(0)) == ("node(s) had untolerated taint(s)",)


def score_taints(tolerations, node_taints) -> list[int]:
    t = table([make_node(f"n{i}", taints=ts) for i, ts in enumerate(node_taints)])
    p = pod("p", spec={"tolerations": tolerations})
    plugin, state = TaintToleration(), CycleState()
    plugin.pre_score(state, p, t, np.arange(t.n))
    return plugin.normalize_scores(state, p, plugin.score_nodes(state, p, t, np.arange(t.n))).tolist()


PNS = "PreferNoSchedule"
# (the pod's tolerations, each node's taints, the normalized scores)
TAINT_SCORE_CASES = [
    ([tol("foo", "bar", PNS)], [[taint("foo", "bar", PNS)], [taint("foo", "blah", PNS)]], [100, 0]),
    (
        [tol("foo", "bar", PNS)],
        [[], [taint("a", "1", PNS)], [taint("a", "1", PNS), taint("b", "2", PNS)]],
        [100, 50, 0],
    ),
    (
        [tol("cpu-type", "arm64", "NoSchedule")],
        [[], [taint("cpu-type", "arm64", "NoSchedule")], [taint("a", "1", PNS), taint("b", "2", PNS)]],
        [100, 100, 0],
    ),
]


@pytest.mark.parametrize(("tolerations", "node_taints", "want"), TAINT_SCORE_CASES)
def test_taint_toleration_scores(tolerations, node_taints, want) -> None:
    assert score_taints(tolerations, node_taints) == want


def affinity(*terms, preferred=()):
    aff = {}
    if terms:
        aff["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": list(terms)}
    if preferred:
        aff["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
    return {"affinity": {"nodeAffinity": aff}}


NODES = [
    make_node("a", labels={"zone": "z1", "gen": "3"}),
    make_node("b", labels={"zone": "z2", "gen": "5"}),
    make_node("c", labels={}),
]


NODE_AFFINITY_CASES = [
    ({"nodeSelector": {"zone": "z1"}}, [True, False, False]),
    (
        affinity({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}]}),
        [True, True, False],
    ),
    (affinity({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]}), [False, True, True]),
    (affinity({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}), [True, True, False]),
    (affinity({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}), [False, False, True]),
    (affinity({"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}), [False, True, False]),
    (affinity({"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["4"]}]}), [True, False, False]),
    (
        affinity(
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]},
        ),
        [True, False, True],
    ),
    (
        affinity(
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "Exists"},
                    {"key": "gen", "operator": "In", "values": ["5"]},
                ]
            }
        ),
        [False, True, False],
    ),
]


@pytest.mark.parametrize(("spec", "fits"), NODE_AFFINITY_CASES)
def test_node_affinity_filter(spec, fits) -> None:
    v = NodeAffinity().filter_nodes(CycleState(), pod("p", spec=spec), table(NODES))
    got = [True] * 3 if v is None else (v.code == 0).tolist()
    assert got == fits
    if v is not None:
        assert v.describe(2) == ("node(s) didn't match Pod's node affinity/selector",)


def test_node_affinity_prefilter_narrows_to_named_nodes() -> None:
    spec = affinity({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]})
    res, st = NodeAffinity().pre_filter(CycleState(), pod("p", spec=spec), table(NODES))
    assert st is None and res.node_names == frozenset({"a", "b"})


def test_node_affinity_preferred_score_is_normalized() -> None:
    spec = affinity(
        preferred=[
            {"weight": 2, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}},
            {"weight": 8, "preference": {"matchExpressions": [{"key": "gen", "operator": "Exists"}]}},
        ]
    )
    p, t, plugin = pod("p", spec=spec), table(NODES), NodeAffinity()
    raw = plugin.score_nodes(CycleState(), p, t, np.arange(3))
    assert raw.tolist() == [10, 8, 0]
    assert plugin.normalize_scores(CycleState(), p, raw).tolist() == [100, 80, 0]


def test_added_affinity_has_its_own_reason() -> None:
    plugin = NodeAffinity(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}]
                }
            }
        }
    )
    v = plugin.filter_nodes(CycleState(), pod("p"), table(NODES))
    assert (v.code == 0).tolist() == [False, True, False]
    assert v.describe(v.reason_at(0)) == ("node(s) didn't match scheduler-enforced node affinity",)


def test_unschedulable_node_and_node_name() -> None:
    t = table([make_node("a", unschedulable=True), make_node("b")])
    v = NodeUnschedulable().filter_nodes(CycleState(), pod("p"), t)
    assert (v.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE).tolist() == [True, False]
    tolerating = pod(
        "p", spec={"tolerations": [tol("node.kubernetes.io/unschedulable", effect="NoSchedule", op="Exists")]}
    )
    assert NodeUnschedulable().filter_nodes(CycleState(), tolerating, t) is None
    v = NodeName().filter_nodes(CycleState(), pod_info_from(make_pod("p", spec={"nodeName": "b"})), t)
    assert (v.code == 0).tolist() == [False, True]
    assert v.describe(0) == ("node(s) didn't match the requested node name",)


def port_spec(port, ip=None, protocol=None):
    p = {"containerPort": 80, "hostPort": port}
    if ip:
        p["hostIP"] = ip
    if protocol:
        p["protocol"] = protocol
    return {"containers": [{"name": "c", "image": "x", "ports": [p]}]}


NODE_PORTS_CASES = [
    (port_spec(8080), port_spec(8080), True),
    (port_spec(8080), port_spec(8081), False),
    (port_spec(8080, protocol="UDP"), port_spec(8080), False),
    (port_spec(8080, ip="10.0.0.1"), port_spec(8080, ip="10.0.0.2"), False),
    (port_spec(8080, ip="10.0.0.1"), port_spec(8080), True),
    (port_spec(8080), port_spec(8080, ip="10.0.0.2"), True),
]


@pytest.mark.parametrize(("used", "wanted", "conflict"), NODE_PORTS_CASES)
def test_node_ports(used, wanted, conflict) -> None:
    t = table([make_node("n")], [make_pod("old", node="n", spec=used)])
    v = NodePorts().filter_nodes(CycleState(), pod("new", spec=wanted), t)
    assert (v is not None and int(v.code[0]) == Code.UNSCHEDULABLE) == conflict


MB = 1024 * 1024
# a holds busybox (500Mi, also on b) and data:v1 (300Mi, a alone); c holds nothing
IMAGE_NODES = [
    make_node(
        "a",
        images=[
            {"names": ["busybox:latest"], "sizeBytes": 500 * MB},
            {"names": ["registry.example/data:v1"], "sizeBytes": 300 * MB},
        ],
    ),
    make_node("b", images=[{"names": ["busybox:latest"], "sizeBytes": 500 * MB}]),
    make_node("c"),
]


def image_spec(image: str, volume: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": image}]}
    if volume is not None:
        spec["volumes"] = [{"name": "data", "image": {"reference": volume, "pullPolicy": "IfNotPresent"}}]
    return spec


# (pod spec, scores on a, b, c): sum of size x spread, clamped to [23Mi, 1000Mi x images]
IMAGE_LOCALITY_CASES = [
    pytest.param(image_spec("busybox"), [31, 31, 0], id="a container's image on two of three nodes"),
    pytest.param(image_spec("busybox", "registry.example/data:v1"), [20, 15, 0], id="an image volume counts"),
    pytest.param(image_spec("pause", "registry.example/data:v1"), [3, 0, 0], id="an image volume alone"),
    pytest.param(image_spec("busybox", "registry.example/data"), [15, 15, 0], id="an untagged volume is :latest"),
]


@pytest.mark.parametrize(("spec", "scores"), IMAGE_LOCALITY_CASES)
def test_image_locality_table(spec: dict, scores: list[int]) -> None:
    t = table(IMAGE_NODES)
    p = pod_info_from({"metadata": {"name": "p"}, "spec": spec})
    assert ImageLocality().score_nodes(CycleState(), p, t, np.arange(3)).tolist() == scores


def test_image_locality_scales_by_spread() -> None:
    mb = 1024 * 1024
    img = [{"names": ["busybox:latest"], "sizeBytes": 500 * mb}]
    t = table([make_node("a", images=img), make_node("b")])
    p = pod_info_from({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    got = ImageLocality().score_nodes(CycleState(), p, t, np.arange(2)).tolist()
    # 500Mi * 1/2 = 250Mi → 100 * (250 - 23) / (1000 - 23) = 23
    assert got == [23, 0]


PORT_CHOICES = st.tuples(
    st.sampled_from([None, "10.0.0.1", "10.0.0.2"]), st.sampled_from(["TCP", "UDP"]), st.sampled_from([80, 81])
)


def _conflicts(wanted: tuple, used: list[tuple]) -> bool:
    """``HostPortInfo.CheckConflict`` written out: same protocol and port, and either IP a wildcard or both equal."""
    ip, proto, port = wanted
    for uip, uproto, uport in used:
        if (uproto, uport) == (proto, port) and (ip is None or uip is None or ip == uip):
            return True
    return False


@settings(max_examples=60, deadline=None)
@given(
    used=st.lists(st.lists(PORT_CHOICES, max_size=3), min_size=1, max_size=5),
    wanted=PORT_CHOICES,
    drop=st.integers(0, 4),
)
def test_node_ports_vectorized_matches_brute_force(used: list[list[tuple]], wanted: tuple, drop: int) -> None:
    """The column check over every node, also after a node is removed (rows shift), agrees with
    the per-node rule."""
    nodes = [make_node(f"n{i}") for i in range(len(used))]
    pods = [
        make_pod(f"p{i}-{j}", node=f"n{i}", spec=port_spec(port, ip, proto))
        for i, ports in enumerate(used)
        for j, (ip, proto, port) in enumerate(ports)
    ]
    t = table(nodes, pods)
    ip, proto, port = wanted
    new = pod("new", spec=port_spec(port, ip, proto))
    expected = [_conflicts(wanted, u) for u in used]
    v = NodePorts().filter_nodes(CycleState(), new, t)
    assert ((v.code != 0).tolist() if v is not None else [False] * len(used)) == expected
    if drop < len(used) and len(used) > 1:
        t.remove_node(f"n{drop}")
        v = NodePorts().filter_nodes(CycleState(), new, t)
        rest = expected[:drop] + expected[drop + 1 :]
        assert ((v.code != 0).tolist() if v is not None else [False] * len(rest)) == rest
