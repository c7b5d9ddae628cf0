"""The replay's GPU ledger keeps its sampled measures (capacity, milli in use, GPUs with a share
taken) as pods bind and leave; checked against the same measures recounted from its arrays after
random binds and releases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.gpus.sharing import MAX_GPUS_PER_NODE, MILLI, GpuLedger, GpuRequest

GPUS = [0, 1, 2, 4, 8]
SHARES = [0, 250, 500, 1000]


def recount(lg: GpuLedger) -> tuple[int, int, int]:
    present = np.arange(MAX_GPUS_PER_NODE)[None, :] < lg.gpu_count[:, None]
    capacity = int(lg.gpu_count.sum()) * MILLI
    return capacity, capacity - int(lg.gpu_left.sum()), int(((lg.gpu_left < MILLI) & present).sum())


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(st.sampled_from(GPUS), min_size=1, max_size=6),
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 30), st.sampled_from(SHARES), st.integers(1, 3)), max_size=60),
)
def test_sampled_measures_follow_binds_and_releases(nodes: list[int], ops: list[tuple[bool, int, int, int]]) -> None:
    lg = GpuLedger()
    for i, gpus in enumerate(nodes):
        lg.add_node(f"n{i}", 64000, gpus, "T4" if gpus else "")
    bound: list[str] = []
    for k, (release, pick, share, count) in enumerate(ops):
        if release and bound:
            lg.release(bound.pop(pick % len(bound)))
        else:
            row = pick % len(nodes)
            free = [d for d in range(nodes[row]) if lg.gpu_left[row, d] >= share]
            if len(free) < count or share == 0:
                continue
            uid = f"p{k}"
            lg.bind(uid, f"n{row}", GpuRequest(1000, share, count), free[:count])
            bound.append(uid)
        assert (lg.capacity_milli, lg.used_milli, lg.used_gpus) == recount(lg)
    for uid in bound:
        lg.release(uid)
    assert (lg.used_milli, lg.used_gpus) == (0, 0)


def test_the_replays_sampled_fragmentation_matches_a_count_over_every_node(tmp_path) -> None:
    """The measure looks a changed node's state up (or computes it alone) when few changed, and
    counts them together otherwise: both agree with the fragmentation of every node at once."""
    import random

    from gpu_trace import write_nodes
    from kubesched.clock import VirtualClock
    from kubesched.cluster.store import Store
    from kubesched.gpus.sharing import GPU_INDEX, Fragmentation, request_of_pod, typical_pods
    from kubesched.replay import trace
    from kubesched.replay.runner import _Measure

    store = Store(VirtualClock())
    nodes = trace.load_nodes_csv(write_nodes(tmp_path / "nodes.csv"))
    for n in nodes:
        store.create("Node", n)
    shapes = [(4000, 1, 500), (8000, 1, 1000), (2000, 2, 1000), (6000, 1, 250), (1000, 0, 0)]
    pods = [trace.trace_pod(f"s{i}", cpu, 1024, g, m, "", "default") for i, (cpu, g, m) in enumerate(shapes)]
    measure = _Measure(store, nodes, Fragmentation(typical_pods(request_of_pod(p) for p in pods), []))
    lg = measure.ledger
    rng = random.Random(7)
    bound: list[str] = []
    for i in range(150):
        if bound and rng.random() < 0.3:
            store.delete("Pod", "default", bound.pop(rng.randrange(len(bound))), 0)
        for _ in range(rng.choice([1, 1, 1, 2, 7])):  # usually one node changed, now and then many
            cpu, gpus, milli = rng.choice(shapes)
            row = rng.randrange(len(nodes))
            free = [d for d in range(int(lg.gpu_count[row])) if lg.gpu_left[row, d] >= milli]
            if len(free) < gpus or lg.cpu_alloc[row] - lg.cpu_used[row] < cpu:
                continue
            pod = trace.trace_pod(f"p{i}-{len(bound)}", cpu, 1024, gpus, milli, "", "default")
            pod["spec"]["nodeName"] = lg.names[row]
            if gpus:
                pod["metadata"]["annotations"][GPU_INDEX] = "-".join(map(str, free[:gpus]))
            store.create("Pod", pod)
            bound.append(pod["metadata"]["name"])
            measure.sync()  # the ledger sees it before the next pick
        measure.sync()
        assert measure.fragmentation() == pytest.approx(lg.fragmentation(measure.frag), rel=1e-12, abs=1e-9)
