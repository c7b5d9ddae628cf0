"""GPU sharing (plugins/gpushare) and the FGD paper's model: requests, typical pods, fragmentation,
the six score policies against brute-force ports of the paper simulator's Go code, device choice,
and the GpuShare filter's verdicts through the scheduler."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kubesched.gpus.sharing as gpushare_module
from kubesched.client import InProcessClient
from kubesched.clock import VirtualClock
from kubesched.cluster import admission
from kubesched.cluster.store import Store
from kubesched.framework.cycle_state import CycleState
from kubesched.gpus.sharing import (
    GPU_COUNT,
    GPU_INDEX,
    GPU_MILLI,
    GPU_MODEL,
    Fragmentation,
    GpuRequest,
    TypicalPod,
    request_of,
    typical_pods,
)
from kubesched.replay.profiles import policy_config
from kubesched.scheduler.config import parse_config
from kubesched.scheduler.scheduler import Scheduler

pytest.importorskip(
    "kubesched_gpushare", reason="the plugins/gpushare package is not installed (pip install -e plugins/gpushare)"
)
from kubesched_gpushare import policies

# -- requests -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, GpuRequest(4000, 0, 0, "")),
        ({GPU_COUNT: "1", GPU_MILLI: "460"}, GpuRequest(4000, 460, 1, "")),
        ({GPU_COUNT: "2"}, GpuRequest(4000, 1000, 2, "")),  # no share: whole GPUs
        ({GPU_COUNT: "1", GPU_MILLI: "1500"}, GpuRequest(4000, 1000, 1, "")),  # capped as the converter caps it
        ({GPU_COUNT: "1", GPU_MILLI: "1000", GPU_MODEL: "T4||V100M16|"}, GpuRequest(4000, 1000, 1, "T4|V100M16")),
        ({GPU_MILLI: "500"}, GpuRequest(4000, 0, 0, "")),  # a share without GPUs asks for nothing
    ],
)
def test_request_of_annotations(annotations, expected):
    assert request_of(annotations, 4000) == expected


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({GPU_COUNT: "x"}, "annotation alibabacloud.com/gpu-count: 'x' is not an integer"),
        ({GPU_COUNT: "-1"}, "annotation alibabacloud.com/gpu-count: '-1' must not be negative"),
        ({GPU_COUNT: "9"}, "annotation alibabacloud.com/gpu-count: 9 GPUs is more than a node has (8)"),
        ({GPU_COUNT: "2", GPU_MILLI: "500"}, "annotation alibabacloud.com/gpu-milli: a share of a GPU (500) needs"),
    ],
)
def test_malformed_requests_name_the_annotation(annotations, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        request_of(annotations, 1000)


# -- typical pods ---------------------------------------------------------------------------------


def test_typical_pods_cover_the_threshold_most_frequent_first():
    a, b, c, d = (
        GpuRequest(1000, 500, 1),
        GpuRequest(2000, 1000, 1),
        GpuRequest(3000, 0, 0),
        GpuRequest(9000, 1000, 8),
    )
    workload = [a] * 50 + [b] * 30 + [c] * 15 + [d] * 5
    typical = typical_pods(workload, threshold=95)
    assert [t.request for t in typical] == [a, b, c]  # 50 + 30 + 15 = 95 %: d is left out
    assert [round(t.weight, 6) for t in typical] == [round(50 / 95, 6), round(30 / 95, 6), round(15 / 95, 6)]
    assert [t.request for t in typical_pods(workload, threshold=96)] == [a, b, c, d]
    # equal counts: the larger shape first (sort.Reverse of the simulator's Less)
    assert [t.request for t in typical_pods([a, b], threshold=100)] == [b, a]
    assert typical_pods([]) == []


# -- fragmentation --------------------------------------------------------------------------------

SHARE = TypicalPod(GpuRequest(4000, 500, 1), 0.5)
CPU_ONLY = TypicalPod(GpuRequest(2000, 0, 0), 0.5)


def _left(*gpus: int) -> np.ndarray:
    return np.array([[*gpus] + [0] * (8 - len(gpus))])


@pytest.mark.parametrize(
    ("name", "cpu_left", "gpus", "model", "typical", "expected"),
    [
        # idle GPUs: the share fits, nothing of it is fragmented; a CPU-only task uses no GPU at all
        ("idle", 8000, (1000, 1000), 0, [SHARE, CPU_ONLY], 0.5 * 0 + 0.5 * 2000),
        # the 300 left on GPU 0 is too little for a 500 share: a fragment for it
        ("partly used", 8000, (300, 1000), 0, [SHARE, CPU_ONLY], 0.5 * 300 + 0.5 * 1300),
        # too little CPU for the share task: every idle GPU is a fragment for it
        ("cpu short", 2000, (300, 1000), 0, [SHARE, CPU_ONLY], 0.5 * 1300 + 0.5 * 1300),
        # a task that wants another model cannot use this node's GPUs at all
        ("other model", 8000, (1000, 1000), 0, [TypicalPod(GpuRequest(1000, 500, 1, "B"), 1.0)], 2000),
        ("its model", 8000, (1000, 1000), 1, [TypicalPod(GpuRequest(1000, 500, 1, "B"), 1.0)], 0),
        # a whole-GPU task needs wholly free GPUs: 900 + 900 are fragments for it
        ("two shares", 8000, (900, 900), 0, [TypicalPod(GpuRequest(1000, 1000, 1), 1.0)], 1800),
        ("no GPUs", 8000, (), -1, [SHARE, CPU_ONLY], 0),
    ],
)
def test_fragmentation_table(name, cpu_left, gpus, model, typical, expected):
    frag = Fragmentation(typical, ["A", "B"])
    got = frag.amount(np.array([cpu_left]), _left(*gpus), np.array([model]))
    assert got[0] == pytest.approx(expected), name


def go_frag(cpu_left: int, left: list[int], typical: list[TypicalPod], node_model: str) -> float:
    """``NodeGpuShareFragAmountScore``, as the simulator's Go code walks it."""
    total = sum(left)
    out = 0.0
    for t in typical:
        r = t.request
        if r.gpu_milli == 0:  # XL / XR: a task without GPUs leaves every idle GPU a fragment
            out += t.weight * total
            continue
        wanted = [m for m in r.gpu_model.split("|") if m]
        if wanted and (not node_model or node_model not in wanted):  # NoAccess
            out += t.weight * total
            continue
        room = sum(1 for x in left if x >= r.gpu_milli)
        if room >= r.gpu_count and cpu_left >= r.cpu_milli:  # Q3: the GPUs too full for it are fragments
            out += t.weight * sum(x for x in left if x < r.gpu_milli)
        else:  # Q1 / Q2 / Q4
            out += t.weight * total
    return out


_typical = st.lists(
    st.tuples(
        st.sampled_from([0, 2000, 4000, 8000, 16000]),
        st.sampled_from([(0, 0), (1, 250), (1, 460), (1, 500), (1, 1000), (2, 1000), (4, 1000), (8, 1000)]),
        st.sampled_from(["", "A", "B", "A|B"]),
        st.floats(0.01, 1.0),
    ),
    min_size=1,
    max_size=8,
)
_node = st.tuples(
    st.sampled_from([0, 1000, 4000, 9000, 64000]),
    st.integers(0, 8),
    st.lists(st.sampled_from([0, 40, 250, 460, 500, 540, 750, 1000]), min_size=8, max_size=8),
    st.sampled_from([0, 1]),
)


@pytest.mark.parametrize("search_from", [0, 10**9], ids=["binary-search", "broadcast"])
@settings(max_examples=150, deadline=None)
@given(typical=_typical, nodes=st.lists(_node, min_size=1, max_size=12))
def test_fragmentation_equals_the_simulators_loop(search_from, typical, nodes):
    """Both ways of counting the GPUs too full for a share (every GPU against every share for few
    states, binary search over sorted states for many), and the one-state form, against the
    simulator's loop."""
    saved = gpushare_module.SEARCH_MIN_STATES
    gpushare_module.SEARCH_MIN_STATES = search_from
    try:
        _check_fragmentation(typical, nodes)
    finally:
        gpushare_module.SEARCH_MIN_STATES = saved


def _check_fragmentation(typical, nodes):
    total = sum(w for *_, w in typical)
    tps = [
        TypicalPod(GpuRequest(cpu, 0 if n == 0 else milli, n, spec if n else ""), w / total)
        for cpu, (n, milli), spec, w in typical
    ]
    models = ["A", "B"]
    frag = Fragmentation(tps, models)
    cpu = np.array([c for c, *_ in nodes])
    left = np.array([[v if i < g else 0 for i, v in enumerate(vals)] for _, g, vals, _ in nodes])
    model = np.array([m if g else -1 for _, g, _, m in nodes])
    got = frag.amount(cpu, left, model)
    for k, (c, g, _, m) in enumerate(nodes):
        expected = go_frag(int(c), left[k].tolist(), tps, models[m] if g else "")
        assert got[k] == pytest.approx(expected, abs=1e-6)
        # the one-state form adds the same terms in the same order: equal bit for bit, so that a
        # score does not depend on which of the two computed it
        assert frag.amount_of(int(c), left[k].tolist(), int(model[k])) == got[k]


# -- the policies, through the scheduler --------------------------------------------------------------

MODELS = ["G2", "T4"]


def _cluster(nodes: list[dict[str, Any]], bound: list[dict[str, Any]], policy: str, typical: list[TypicalPod]):
    store = Store(VirtualClock(), seed=0)
    admission.install(store)
    for n in nodes:
        store.create("Node", n)
    for p in bound:
        store.create("Pod", p)
    config = parse_config(policy_config(policy, typical), "test")
    sched = Scheduler(InProcessClient(store), config, store.clock, seed=0)
    sched.start()
    sched.process_events()
    return store, sched


def gpu_node(name: str, cpu: int, gpus: int, model: str) -> dict[str, Any]:
    alloc = {"cpu": f"{cpu}m", "memory": "512Gi", "pods": "1001"}
    labels = {"kubernetes.io/hostname": name}
    if gpus:
        alloc[GPU_COUNT] = str(gpus)
        labels[GPU_MODEL] = model
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": alloc},
    }


def gpu_pod(name: str, cpu: int, count: int = 0, milli: int = 0, *, model: str = "", node: str = "", index: str = ""):
    ann: dict[str, str] = {}
    if count:
        ann = {GPU_COUNT: str(count), GPU_MILLI: str(milli)}
        if model:
            ann[GPU_MODEL] = model
        if index:
            ann[GPU_INDEX] = index
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": f"{cpu}m", "memory": "1Gi"}}}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": ann},
        "spec": spec,
    }


def scores_for(policy: str, nodes, bound, pod, typical) -> dict[str, int]:
    """Each feasible node's (normalized) score from the policy's plugin, as the scheduler computed it
    on a new cluster."""
    store, sched = _cluster(nodes, bound, policy, typical)
    return _scores(store, sched, policy, pod)


def _scores(store, sched, policy: str, pod) -> dict[str, int]:
    """One scheduling cycle of ``pod`` in a running cluster: each feasible node's score."""
    store.create("Pod", pod)
    sched.process_events()
    qp = sched.queue.pop()
    fwk = sched.profiles["default-scheduler"]
    result = sched.algorithm.schedule_pod(fwk, CycleState(), qp.pod, sched.cache.table, sched.queue, explain=True)
    info = result.report
    assert info is not None and info.rows is not None
    plugin = {
        "Random": "RandomScore",
        "DotProduct": "DotProductScore",
        "GpuClustering": "GpuClusteringScore",
        "GpuPacking": "GpuPackingScore",
        "BestFit": "BestFitScore",
        "FGD": "FGDScore",
    }[policy]
    return {sched.cache.table.names[int(r)]: int(s) for r, s in zip(info.rows, info.scores[plugin], strict=True)}


# brute-force ports of pkg/simulator/plugin/*_score.go, node by node


def ref_packing(left: list[int], count: int, req: GpuRequest) -> int:
    if req.gpu_milli <= 0:
        return 0
    free = sum(1 for x in left[:count] if x == 1000)
    if free == count:
        return max(100 // 3 - free, free)
    need, free_used, used = req.gpu_count, 0, []
    for i in sorted(range(count), key=lambda i: left[i]):
        if need and req.gpu_milli <= left[i]:
            need -= 1
            used.append(i)
            free_used += left[i] == 1000
    if free_used:
        return max(100 // 2 - free_used, 100 // 3)
    ratio = sum(left[i] * 100 // 1000 for i in used)
    return max(100 - ratio // 10, 100 // 2)


def ref_clustering(left: list[int], count: int, affinity: dict[str, int], req: GpuRequest) -> int:
    if not req.gpu_count:
        return 0
    base = 100 // 4 * (8000 - sum(left[:count])) // 8000
    if affinity.get(req.affinity, 0) > 0:
        return base + (75 if len(affinity) == 1 else 50)
    return base + (25 if not affinity else 0)


def ref_dot(cpu_left: int, left: list[int], req: GpuRequest) -> int:
    if cpu_left < req.cpu_milli:
        return 0
    dot = (cpu_left / 128000) * (req.cpu_milli / 128000) + (sum(left) / 8000) * (req.total_milli / 8000)
    return int(100 * (1 - dot / 2))


def ref_bestfit_raw(cpu_left: int, left: list[int], req: GpuRequest) -> int:
    s = (cpu_left - req.cpu_milli) / 128000 * 0.5 + (sum(left) - req.total_milli) / 8000 * 0.5
    return int((1.0 - s) * 100)


def ref_fgd(cpu_left: int, left: list[int], model: str, req: GpuRequest, typical: list[TypicalPod]) -> int:
    def sig(x: float) -> float:
        return 1.0 / (1.0 + math.exp(-x))

    old = go_frag(cpu_left, left, typical, model)
    if req.shares_gpu:
        best = None
        for i, x in enumerate(left):
            if x >= req.gpu_milli:
                new = list(left)
                new[i] -= req.gpu_milli
                s = int(sig((old - go_frag(cpu_left - req.cpu_milli, new, typical, model)) / 1000) * 100)
                best = s if best is None or s > best else best
        return best or 0
    new = list(left)
    need = req.gpu_count
    for i in sorted(range(8), key=lambda i: left[i]):
        if need and new[i] >= req.gpu_milli:
            new[i] -= req.gpu_milli
            need -= 1
    return int(sig((old - go_frag(cpu_left - req.cpu_milli, new, typical, model)) / 1000) * 100)


_used = st.lists(st.sampled_from([0, 0, 0, 250, 460, 500, 750, 1000]), min_size=8, max_size=8)
_state = st.lists(
    st.tuples(st.sampled_from([(96000, 8, "G2"), (64000, 2, "T4"), (64000, 4, "T4"), (32000, 0, "")]), _used,
              st.integers(0, 3)),
    min_size=2,
    max_size=6,
)  # fmt: skip
_pod = st.sampled_from(
    [GpuRequest(4000, 460, 1), GpuRequest(6000, 1000, 1), GpuRequest(8000, 250, 1), GpuRequest(12000, 1000, 2),
     GpuRequest(2000, 0, 0), GpuRequest(4000, 500, 1, "T4"), GpuRequest(16000, 1000, 4)]
)  # fmt: skip
TYPICAL = [
    TypicalPod(GpuRequest(4000, 460, 1), 0.4),
    TypicalPod(GpuRequest(6000, 1000, 1), 0.3),
    TypicalPod(GpuRequest(2000, 0, 0), 0.2),
    TypicalPod(GpuRequest(12000, 1000, 2, "T4"), 0.1),
]


def _build_state(state):
    """Nodes and the bound pods that use their GPUs; the reference's view of each node."""
    nodes, bound, view = [], [], {}
    for k, ((cpu, gpus, model), used, cpu_pods) in enumerate(state):
        name = f"n{k}"
        nodes.append(gpu_node(name, cpu, gpus, model))
        left = [1000 - u if i < gpus else 0 for i, u in enumerate(used)]
        affinity: dict[str, int] = {}
        cpu_used = 0
        for i in range(gpus):
            if used[i]:
                bound.append(gpu_pod(f"b{k}-{i}", 1000, 1, used[i], node=name, index=str(i)))
                cpu_used += 1000
                tag = "share-gpu" if used[i] < 1000 else "1-gpu"
                affinity[tag] = affinity.get(tag, 0) + 1
        for j in range(cpu_pods):
            bound.append(gpu_pod(f"c{k}-{j}", 3000, node=name))
            cpu_used += 3000
        view[name] = (cpu - cpu_used, left, gpus, model, affinity)
    return nodes, bound, view


def _feasible(view, req: GpuRequest) -> set[str]:
    out = set()
    for name, (cpu_left, left, gpus, model, _) in view.items():
        if cpu_left < req.cpu_milli:
            continue
        if req.gpu_count:
            wanted = [m for m in req.gpu_model.split("|") if m]
            if not gpus or (wanted and model not in wanted):
                continue
            if sum(1 for x in left[:gpus] if x >= req.gpu_milli) < req.gpu_count:
                continue
        out.add(name)
    return out


def _pod_of(req: GpuRequest):
    return gpu_pod("p", req.cpu_milli, req.gpu_count, req.gpu_milli, model=req.gpu_model)


@pytest.fixture(params=["one by one", "vectorized"])
def fgd_rows(request, monkeypatch):
    """FGDScore scores the few rows that changed node by node and many rows in one vectorized
    pass: both ways, for the tests that check its scores."""
    monkeypatch.setattr(policies, "FEW_ROWS", 10**9 if request.param == "one by one" else 0)
    return request.param


@pytest.mark.parametrize("policy", ["DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD"])
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(state=_state, req=_pod)
def test_policy_scores_equal_the_simulators(policy, state, req, fgd_rows):
    nodes, bound, view = _build_state(state)
    feasible = _feasible(view, req)
    if len(feasible) < 2:
        return  # one feasible node is chosen without scoring, as upstream does
    got = scores_for(policy, nodes, bound, _pod_of(req), TYPICAL)
    assert set(got) == feasible
    if policy == "BestFit":
        raw = {n: ref_bestfit_raw(view[n][0], view[n][1], req) for n in feasible}
        lo, hi = min(raw.values()), max(raw.values())
        want = {n: 0 if hi == lo else (v - lo) * 100 // (hi - lo) for n, v in raw.items()}
    else:
        want = {}
        for n in feasible:
            cpu_left, left, gpus, model, affinity = view[n]
            if policy == "DotProduct":
                want[n] = ref_dot(cpu_left, left, req)
            elif policy == "GpuClustering":
                want[n] = ref_clustering(left, gpus, affinity, req)
            elif policy == "GpuPacking":
                want[n] = ref_packing(left, gpus, req)
            else:
                want[n] = ref_fgd(cpu_left, left, model, req, TYPICAL)
    assert got == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    state=st.lists(
        st.tuples(st.sampled_from([(96000, 8, "G2"), (64000, 2, "T4"), (16000, 4, "T4"), (32000, 0, "")]), _used,
                  st.integers(0, 5)),
        min_size=1,
        max_size=10,
    ),
    typical=_typical,
    req=_pod,
)  # fmt: skip
def test_fgd_scores_the_same_node_by_node_and_vectorized(state, typical, req):
    """The two ways FGDScore computes scores agree exactly, on every node state and any typical
    pods (their weights summed in one order by both): a node's score does not depend on how many
    other nodes changed since its pod shape was last scored."""
    nodes, bound, _ = _build_state(state)
    total = sum(w for *_, w in typical)
    models = {"": "", "A": "G2", "B": "T4", "A|B": "G2|T4"}  # _typical's models, as _state's nodes name them
    tps = [
        TypicalPod(GpuRequest(cpu, 0 if n == 0 else milli, n, models[spec] if n else ""), w / total)
        for cpu, (n, milli), spec, w in typical
    ]
    _, sched = _cluster(nodes, bound, "FGD", tps)
    fgd = sched.profiles["default-scheduler"].plugin("FGDScore")
    table = sched.cache.table
    srows = fgd.state.rows_for(table)
    cpu_left = table.alloc[0] - table.requested[0]
    frag = fgd.state.frag
    fgd._now = None  # each way from nothing: both refresh every node's current fragmentation
    vectorized = fgd._compute(frag, req, srows, cpu_left) if len(srows) >= policies.FEW_ROWS else None
    if vectorized is None:
        saved, policies.FEW_ROWS = policies.FEW_ROWS, 0
        try:
            vectorized = fgd._compute(frag, req, srows, cpu_left)
        finally:
            policies.FEW_ROWS = saved
    fgd._now = None
    one_by_one = fgd._compute_few(frag, req, srows, cpu_left)
    assert one_by_one.tolist() == vectorized.tolist()
    # and with the current fragmentation kept from the other way
    assert fgd._compute_few(frag, req, srows, cpu_left).tolist() == vectorized.tolist()


def test_fgd_scores_follow_the_nodes_as_they_change_between_cycles(fgd_rows):
    """FGD keeps scores per pod shape and each node's fragmentation between cycles: a node whose
    GPUs or free CPU changed is scored afresh, against the simulator's formula on the new state."""
    before = [
        ((96000, 8, "G2"), [0] * 8, 0),
        ((16000, 8, "G2"), [500, 0, 0, 0, 0, 0, 0, 0], 0),
        ((64000, 4, "T4"), [0] * 8, 1),
    ]
    # n1's allocatable CPU is cut to 4,000 (a node update, no pod moves): its free CPU falls from
    # 15,000 to 3,000, below what the typical pods ask, its GPUs as they were
    after = [((96000, 8, "G2"), [460, 1000, 0, 0, 0, 0, 0, 0], 2), ((4000, 8, "G2"), before[1][1], 0), before[2]]
    nodes, bound, _ = _build_state(before)
    store, sched = _cluster(nodes, bound, "FGD", TYPICAL)
    shapes = [GpuRequest(2000, 460, 1), GpuRequest(2000, 1000, 1)]
    for i, req in enumerate(shapes):  # fills the caches
        _scores(store, sched, "FGD", gpu_pod(f"first-{i}", req.cpu_milli, req.gpu_count, req.gpu_milli))
    for p in _build_state(after)[1]:  # n0 gets a share, a whole GPU and CPU-only pods
        if p["metadata"]["name"] not in {q["metadata"]["name"] for q in bound}:
            store.create("Pod", p)
    store.mutate("Node", "", "n1", lambda n: {**n, "status": gpu_node("n1", 4000, 8, "G2")["status"]})
    _, _, view = _build_state(after)
    for i, req in enumerate(shapes):
        got = _scores(store, sched, "FGD", gpu_pod(f"again-{i}", req.cpu_milli, req.gpu_count, req.gpu_milli))
        want = {n: ref_fgd(view[n][0], view[n][1], view[n][3], req, TYPICAL) for n in _feasible(view, req)}
        assert got == want, req


def test_random_policy_scores_one_feasible_node():
    nodes = [gpu_node(f"n{i}", 64000, 2, "T4") for i in range(4)]
    got = scores_for("Random", nodes, [], gpu_pod("p", 1000, 1, 500), TYPICAL)
    assert sorted(got.values()) == [0, 0, 0, 100]


# -- devices: choice, recording, release ------------------------------------------------------------------


def _schedule_pending(sched) -> None:
    while True:
        sched.process_events()
        if not sched.queue.has_active():
            break
        sched.schedule_one()
    sched.process_events()


def _schedule(store, sched, pod) -> dict[str, Any]:
    store.create("Pod", pod)
    _schedule_pending(sched)
    return store.get("Pod", "default", pod["metadata"]["name"])


@pytest.mark.parametrize(
    ("policy", "used", "req", "devices"),
    [
        # best fit: the fullest GPU the share fits, the first of equals
        ("BestFit", [0, 700, 300, 700], GpuRequest(1000, 300, 1), "1"),
        ("BestFit", [0, 700, 300, 700], GpuRequest(1000, 400, 1), "2"),
        ("WorstFit", [0, 700, 300, 700], GpuRequest(1000, 300, 1), "0"),
        # whole GPUs: the first wholly free ones, in device order
        ("BestFit", [0, 600, 0, 1000], GpuRequest(1000, 1000, 2), "0-2"),
        ("FGD", [0, 600, 0, 1000], GpuRequest(1000, 1000, 2), "0-2"),
        # FGD: the GPU whose use leaves the least fragmentation for the typical pods: on GPU 0 (540
        # left) the share leaves 80, fragmentation 1224 -> 980, score 56; on a free GPU 1224 -> 1248, 49
        ("FGD", [460, 0, 0, 0], GpuRequest(1000, 460, 1), "0"),
    ],
)
def test_devices_chosen_and_recorded_on_the_pod(policy, used, req, devices):
    bound = [gpu_pod(f"b{i}", 100, 1, u, node="n0", index=str(i)) for i, u in enumerate(used) if u]
    store, sched = _cluster(
        [gpu_node("n0", 96000, 4, "G2")], bound, "BestFit" if policy == "WorstFit" else policy, TYPICAL
    )
    if policy == "WorstFit":
        sched.profiles["default-scheduler"].plugins["GpuShare"].args.gpu_selection = "WorstFit"
    pod = _schedule(store, sched, _pod_of(req))
    assert pod["spec"]["nodeName"] == "n0"
    assert pod["metadata"]["annotations"][GPU_INDEX] == devices


def test_a_deleted_pod_gives_its_share_back():
    store, sched = _cluster([gpu_node("n0", 96000, 1, "G2")], [], "BestFit", TYPICAL)
    first = _schedule(store, sched, gpu_pod("a", 1000, 1, 700))
    assert first["spec"]["nodeName"] == "n0"
    second = _schedule(store, sched, gpu_pod("b", 1000, 1, 700))
    assert not second["spec"].get("nodeName")
    assert sched.last_message["default/b"].startswith("0/1 nodes are available: 1 node(s) didn't have enough free GPU.")
    store.delete("Pod", "default", "a", 0)
    sched.process_events()  # the deletion requeues b (GpuShare registered AssignedPod/Delete), after its backoff
    assert sched.queue.counts()["backoff"] == 1
    store.clock.advance_to(store.clock.now() + 1)
    sched.queue.flush_backoff_completed()
    _schedule_pending(sched)
    assert store.get("Pod", "default", "b")["spec"]["nodeName"] == "n0"
    assert store.get("Pod", "default", "b")["metadata"]["annotations"][GPU_INDEX] == "0"


def test_filter_verdicts_name_the_gpu_reason():
    nodes = [gpu_node("cpu", 64000, 0, ""), gpu_node("g2", 96000, 2, "G2"), gpu_node("t4", 64000, 2, "T4")]
    bound = [gpu_pod("x", 100, 1, 800, node="t4", index="0"), gpu_pod("y", 100, 1, 800, node="t4", index="1")]
    store, sched = _cluster(nodes, bound, "BestFit", TYPICAL)
    pod = _schedule(store, sched, gpu_pod("p", 1000, 1, 500, model="T4"))
    assert not pod["spec"].get("nodeName")
    assert sched.last_message["default/p"].startswith(
        "0/3 nodes are available: 1 node(s) didn't have enough free GPU, 1 node(s) didn't have the requested "
        "GPU model, 1 node(s) had no GPU."
    )


def test_gpushare_prefilter_replayed_places_pods_as_called():
    """GpuShare declares its PreFilter replayable (``Memo``): pods of two GPU templates arriving
    in turn, each scheduled as it comes, get the same nodes, devices and messages with the
    template memo as without it, and the memo does replay PreFilter whole."""
    shapes = [(4000, 1, 460), (6000, 1, 1000), (4000, 1, 460), (6000, 1, 1000)] * 4 + [(64000, 8, 1000)] * 2

    def run(memo: bool):
        nodes = [gpu_node(f"n{i}", 32000, 4 if i % 2 else 8, "G2") for i in range(4)]
        store, sched = _cluster(nodes, [], "FGD", TYPICAL)
        fw = sched.profiles["default-scheduler"]
        if not memo:
            fw.use_template_memo(False)
        whole = 0
        for i, (cpu, count, milli) in enumerate(shapes):
            _schedule(store, sched, gpu_pod(f"p{i}", cpu, count, milli))
            whole += bool(memo and fw.pre_filter_memo.replaying())
        out = {}
        for i in range(len(shapes)):
            obj = store.get("Pod", "default", f"p{i}")
            conditions = [(c.get("reason"), c.get("message")) for c in (obj.get("status") or {}).get("conditions", [])]
            ann = obj["metadata"].get("annotations") or {}
            out[obj["metadata"]["name"]] = (obj["spec"].get("nodeName"), ann.get(GPU_INDEX), conditions)
        return out, whole

    replayed, whole = run(True)
    assert whole > 0
    assert replayed == run(False)[0]
    assert [v[0] for k, v in replayed.items() if k in ("p16", "p17")] == [None, None]  # 8 GPUs and 64 CPUs: no node


def test_the_models_former_name_still_imports_with_a_deprecation_warning():
    """``kubesched.framework.gpushare`` moved to ``kubesched.gpus.sharing``: the old name gives the
    same objects, and says so, for one release."""
    import importlib
    import sys

    sys.modules.pop("kubesched.framework.gpushare", None)
    with pytest.warns(DeprecationWarning, match=r"import kubesched\.gpus\.sharing"):
        old = importlib.import_module("kubesched.framework.gpushare")
    assert old.GpuLedger is gpushare_module.GpuLedger and old.typical_pods is gpushare_module.typical_pods
