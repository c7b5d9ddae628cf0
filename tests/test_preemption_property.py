"""Property: preemption only ever evicts pods of lower priority than the preemptor, exactly the
victims its dry run chose, and those are enough for the preemptor to fit on that node."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import make_node, make_pod, make_priority_class
from kubesched.scheduler.preemption.executor import Executor
from kubesched.testing import Cluster

CLASSES = [make_priority_class(f"p{v}", v) for v in range(4)]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict], list[dict]]:
    n_nodes = draw(st.integers(1, 4))
    nodes = [make_node(f"n{i}", cpu=str(draw(st.integers(1, 4)))) for i in range(n_nodes)]
    running = []
    for i in range(draw(st.integers(2, 12))):  # running pods, mostly of low priority
        node = f"n{draw(st.integers(0, n_nodes - 1))}"
        cpu = f"{draw(st.integers(1, 4)) * 250}m"
        p = make_pod(f"r{i}", cpu=cpu, node=node, priority_class=f"p{draw(st.integers(0, 2))}")
        p["spec"]["terminationGracePeriodSeconds"] = draw(st.sampled_from([0, 5, 30]))
        running.append(p)
    pending = [  # pending pods, mostly of high priority
        make_pod(f"q{i}", cpu=f"{draw(st.integers(1, 8)) * 250}m", priority_class=f"p{draw(st.integers(1, 3))}")
        for i in range(draw(st.integers(1, 5)))
    ]
    return nodes + running, pending


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_preemption_evicts_only_lower_priority_pods_the_dry_run_chose(cluster) -> None:
    objects, pending = cluster
    chosen: list[tuple[object, object]] = []
    original = Executor.prepare_async

    def record(self, candidate, pod):  # the dry run's decision, and the node as it was then
        table = self.handle.cache.table
        row = table.index[candidate.node]
        cpu = table.res_index["cpu"]
        free = int(table.alloc[cpu, row]) - int(table.requested[cpu, row])
        chosen.append((pod, candidate, free))
        return original(self, candidate, pod)

    Executor.prepare_async = record  # type: ignore[method-assign]
    try:
        # invalid combinations (a running pod over its node's capacity) are fine: the scheduler
        # must still never evict a pod of equal or higher priority
        c = Cluster(*CLASSES, *[o for o in objects])
        watch = c.store.watch(["Pod"])
        c.create(*pending)
        c.settle()
        for _ in range(8):
            c.advance(30)
    finally:
        Executor.prepare_async = original  # type: ignore[method-assign]

    deleted = {ev.obj["metadata"]["uid"] for ev in watch.drain() if ev.type == "DELETED"}
    victims = set()
    for preemptor, candidate, free in chosen:
        assert candidate.victims, "a preemption always names victims"
        for v in candidate.victims:
            assert v.priority < preemptor.priority
            victims.add(v.uid)
        freed = sum(v.requests.get("cpu", 0) for v in candidate.victims)
        assert free + freed >= preemptor.requests.get("cpu", 0)
    assert deleted == victims
