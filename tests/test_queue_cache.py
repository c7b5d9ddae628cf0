"""State machines: queue backoff, moves on cluster events, gating; cache assume/confirm/forget."""

import pytest

from helpers import make_node, make_pod, pod
from kubesched.api.node import node_info_from
from kubesched.api.pod import pod_info_from
from kubesched.clock import VirtualClock
from kubesched.framework.events import ASSIGNED_POD, NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.status import Code, Status
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.queue import SchedulingQueue
from kubesched.scheduler.queue_podgroups import QueuedPodGroupInfo
from kubesched.scheduler.queued import QueuedPodInfo


def _fits(p, _old, new) -> bool:
    return new.allocatable.get("cpu", 0) >= p.requests.get("cpu", 0)


# NodeResourcesFit's interest in node adds, with a hint: only a node big enough helps
FIT_ON_NODE_ADD = {"NodeResourcesFit": [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), _fits)]}


def failed_on_fit(q, name: str, cpu: str, event_node: dict | None = None):
    """Add and pop a pod; optionally a node appears while it is in flight; it fails on fit."""
    q.add(pod(name, cpu=cpu))
    qp = q.pop()
    if event_node is not None:
        q.move_all(ClusterEvent(NODE, ActionType.ADD), None, node_info_from(event_node))
    qp.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable(qp)
    return qp


def make_queue(clock, events=None, gate=None):
    return SchedulingQueue(
        clock, sort_key=lambda qp: (-qp.pod.priority, qp.timestamp), pre_enqueue=gate, events=lambda _p: events or {}
    )


def test_active_queue_orders_by_priority_then_time() -> None:
    clock = VirtualClock()
    q = make_queue(clock)
    q.add(pod("low", priority=1))
    clock.advance_to(1)
    q.add(pod("high", priority=10))
    q.add(pod("high2", priority=10))
    assert [q.pop().pod.name for _ in range(3)] == ["high", "high2", "low"]


def test_backoff_doubles_to_the_cap() -> None:
    clock = VirtualClock()
    q = make_queue(clock)
    q.add(pod("p"))
    durations = []
    for _ in range(6):
        qp = q.pop()
        qp.unschedulable_plugins = set()
        q.add_unschedulable(qp)  # no rejecting plugin: error backoff
        durations.append(q.backoff_duration(qp))
        assert q.where(qp.uid) == "backoff"
        clock.advance_to(q.next_backoff_expiry())
        q.flush_backoff_completed()
    assert durations == [1, 2, 4, 8, 10, 10]


def test_unschedulable_pod_moves_only_when_a_rejecting_plugin_cares() -> None:
    clock = VirtualClock()
    q = make_queue(clock, FIT_ON_NODE_ADD)
    qp = failed_on_fit(q, "p", "2")
    assert q.where(qp.uid) == "unschedulable"
    small = node_info_from(make_node("small", cpu="1"))
    assert q.move_all(ClusterEvent(NODE, ActionType.ADD), None, small) == 0
    assert q.move_all(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), None, small) == 0
    big = node_info_from(make_node("big", cpu="4"))
    assert q.move_all(ClusterEvent(NODE, ActionType.ADD), None, big) == 1
    assert q.where(qp.uid) == "backoff"  # still within its 1s backoff
    clock.advance_to(1)
    q.flush_backoff_completed()
    # its expiry (1 s, in the window [1, 2)) is over once that window is: isEntityBackingoff
    assert q.where(qp.uid) == "backoff" and q.next_backoff_expiry() == 2
    clock.advance_to(2)
    q.flush_backoff_completed()
    assert q.where(qp.uid) == "active"


def make_queue_without_pop_from_backoff(clock):
    return SchedulingQueue(
        clock,
        sort_key=lambda qp: (-qp.pod.priority, qp.timestamp),
        events=lambda _p: FIT_ON_NODE_ADD,
        pop_from_backoff=False,
    )


def test_an_idle_queue_pops_the_pod_whose_backoff_ends_first() -> None:
    """SchedulerPopFromBackoffQ (beta, on): with activeQ empty, pop takes an unschedulable pod
    from backoffQ at once, the earliest window first and then the higher priority; a pod that
    failed with an error waits its backoff out. With the gate off, nothing is popped early."""
    clock = VirtualClock()
    q = make_queue(clock, FIT_ON_NODE_ADD)
    low = failed_on_fit(q, "low", "2", make_node("big", cpu="4"))
    q.add(pod("high", priority=10))
    high = q.pop()
    q.move_all(ClusterEvent(NODE, ActionType.ADD), None, node_info_from(make_node("big", cpu="4")))
    high.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable(high)
    q.add(pod("broken"))
    broken = q.pop()
    broken.unschedulable_plugins = set()  # an error
    q.add_unschedulable(broken)
    assert [q.where(x.uid) for x in (low, high, broken)] == ["backoff"] * 3
    assert q.has_active()
    assert [q.pop().pod.name for _ in range(2)] == ["high", "low"]  # the same window: priority
    assert q.pop() is None and not q.has_active() and q.where(broken.uid) == "backoff"

    off = make_queue_without_pop_from_backoff(clock)
    qp = failed_on_fit(off, "p", "2", make_node("big", cpu="4"))
    assert off.where(qp.uid) == "backoff" and off.pop() is None and not off.has_active()


def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    clock = VirtualClock()
    q = make_queue(clock)
    q.add(pod("p"))
    qp = q.pop()
    qp.unschedulable_plugins = {"X"}
    q.add_unschedulable(qp)
    clock.advance_to(300)
    assert q.flush_unschedulable_leftover() == 0
    clock.advance_to(300.5)
    assert q.flush_unschedulable_leftover() == 1
    assert q.where(qp.uid) == "active"


def test_gated_pod_waits_until_gates_are_removed() -> None:
    clock = VirtualClock()
    gate = lambda p: Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gated") if p.scheduling_gates else None  # noqa: E731
    q = make_queue(clock, gate=gate)
    gated = pod("p", spec={"schedulingGates": [{"name": "x"}]})
    q.add(gated)
    assert q.where(gated.uid) == "gated" and q.pop() is None
    q.update(pod("p"))
    assert q.where(gated.uid) == "active"


def _nominated(name: str, node: str):
    obj = make_pod(name)
    if node:
        obj["status"] = {"nominatedNodeName": node}
    return pod_info_from(obj)


@pytest.mark.parametrize(
    ("before", "in_memory", "after", "held"),
    [
        # UpdateNominatedPod (backend/queue/nominator.go): the status decides when it names a
        # node before or after the update
        ("n1", "n1", "", ""),  # cleared by another component (a preemptor's clearNominatedNodeName)
        ("n1", "n1", "n2", "n2"),  # changed
        ("", "", "n2", "n2"),  # added
        # neither names one: a nomination made in memory and not written back yet is kept
        ("", "n1", "", "n1"),
        ("", "", "", ""),
    ],
)
def test_an_update_moves_the_nomination_as_the_status_says(before, in_memory, after, held) -> None:
    q = make_queue(VirtualClock())
    old = _nominated("p", before)
    q.add(old)
    if in_memory and not before:
        q.add_nominated(old, in_memory)
    assert q.nominated_node_of(old.uid) == in_memory
    new = _nominated("p", after)
    q.update(new, None, old)
    assert q.nominated_node_of(new.uid) == held
    assert q.nominated_pods_for_node(held) == ([new] if held else [])


def test_nominator_tracks_one_node_per_pod() -> None:
    q = make_queue(VirtualClock())
    p = pod("p")
    q.add_nominated(p, "n1")
    q.add_nominated(p, "n2")
    assert q.nominated_pods_for_node("n1") == [] and q.nominated_pods_for_node("n2") == [p]
    q.delete_nominated(p.uid)
    assert q.nominated == {}


def test_cache_assume_confirm_forget() -> None:
    cache = Cache()
    cache.add_node(make_node("n", cpu="2"))
    p = pod("p", cpu="500m", node="n")
    cache.assume_pod(p, "n")
    assert cache.table.requested[0, 0] == 500 and cache.is_assumed(p.uid)
    cache.add_pod(p)  # the watch confirms the binding: no double counting
    assert cache.table.requested[0, 0] == 500 and not cache.is_assumed(p.uid)
    q = pod("q", cpu="1", node="n")
    cache.assume_pod(q, "n")
    cache.forget_pod(q.uid)
    assert cache.table.requested[0, 0] == 500 and cache.table.pod_count[0] == 1
    cache.remove_pod(p.uid)
    assert cache.table.requested[0, 0] == 0 and cache.table.pod_count[0] == 0


def test_pods_on_a_node_added_later_are_accounted() -> None:
    cache = Cache()
    cache.add_pod(pod("p", cpu="1", node="late"))
    cache.add_node(make_node("late"))
    assert cache.table.requested[0, 0] == 1000


def test_an_event_during_the_attempt_is_not_lost() -> None:
    # upstream's in-flight events: a node that appears while the pod is being scheduled sends it
    # to backoff (not to the unschedulable pool) when the attempt then fails
    clock = VirtualClock()
    q = make_queue(clock, FIT_ON_NODE_ADD)
    qp = failed_on_fit(q, "p", "2", event_node=make_node("small", cpu="1"))
    assert q.where(qp.uid) == "unschedulable"  # the small node cannot help
    qp = failed_on_fit(q, "p2", "2", event_node=make_node("big", cpu="4"))
    assert q.where(qp.uid) == "backoff"


def test_gated_pods_are_rechecked_only_for_events_their_gating_plugin_registered() -> None:
    """Gated pods are grouped by gating plugin: an event none of that plugin's registrations
    matches re-runs no PreEnqueue at all; a matching one does, and a pod then held by another
    plugin is filed under that plugin, whose events then move it."""
    clock = VirtualClock()
    holds = {"p": "GateA"}
    calls: list[str] = []

    def gate(p):
        calls.append(p.name)
        plugin = holds.get(p.name)
        return None if plugin is None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("held",), plugin)

    events = {
        "GateA": [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD))],
        "GateB": [ClusterEventWithHint(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL))],
    }
    registered = dict(events)
    q = SchedulingQueue(clock, sort_key=lambda qp: qp.timestamp, pre_enqueue=gate, events=lambda _p: registered)
    q.add(pod("p"))
    assert [g.gating_plugin for g in q.gated_pods()] == ["GateA"] and calls == ["p"]
    q.move_all(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL))  # GateA did not register it
    assert calls == ["p"]
    holds["p"] = "GateB"
    q.move_all(ClusterEvent(NODE, ActionType.ADD))  # GateA's event: PreEnqueue again, now held by GateB
    assert calls == ["p", "p"] and [g.gating_plugin for g in q.gated_pods()] == ["GateB"]
    q.move_all(ClusterEvent(NODE, ActionType.ADD))  # no longer GateA's pod
    assert calls == ["p", "p"]
    del holds["p"]
    q.move_all(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL))
    assert q.gated_pods() == [] and q.pop().pod.name == "p"


def test_a_preemptor_held_by_default_preemption_is_requeued_by_the_plugins_that_rejected_it() -> None:
    """A preemptor activated while its preemption runs is gated by DefaultPreemption, whose hint
    for a victim's deletion always skips (``isPodSchedulableAfterAssignedPodDeletion``): it is
    NodeResourcesFit, which rejected its last attempt, that requeues it when a victim is gone
    (``isPodWorthRequeuing`` reads UnschedulablePlugins, the gating plugin added to them), into
    backoffQ while its backoff lasts; while the preemption still runs it stays gated."""
    clock = VirtualClock()
    preempting = {"p"}

    def gate(p):
        if p.name in preempting:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for the preemption",), "DefaultPreemption")
        return None

    victim_gone = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
    events = {
        "NodeResourcesFit": [ClusterEventWithHint(victim_gone)],
        "DefaultPreemption": [ClusterEventWithHint(victim_gone, lambda _p, _o, _n: False)],
    }
    q = make_queue(clock, events, gate)
    preempting.clear()
    qp = failed_on_fit(q, "p", "2")
    preempting.add("p")
    q.activate([qp.uid])
    assert q.where(qp.uid) == "gated" and qp.unschedulable_plugins == {"NodeResourcesFit", "DefaultPreemption"}
    victim = pod_info_from(make_pod("victim", cpu="2", node="n1"))
    assert q.move_all(victim_gone, victim, None) == 0  # the preemption still runs
    assert q.where(qp.uid) == "gated"
    preempting.clear()
    assert q.move_all(victim_gone, victim, None) == 1
    assert q.where(qp.uid) == "backoff"  # its 1 s backoff from the failed attempt
    clock.advance_to(2)
    q.flush_backoff_completed()
    assert q.pop() is qp


def test_a_gated_pod_whose_only_rejector_skips_stays_gated() -> None:
    """Without a rejector of its last attempt, a DefaultPreemption-held pod is not moved by a
    victim's deletion: the gating plugin's own hint skips."""
    clock = VirtualClock()
    victim_gone = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
    events = {"DefaultPreemption": [ClusterEventWithHint(victim_gone, lambda _p, _o, _n: False)]}
    holding = [True]

    def gate(_p):
        if holding[0]:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting",), "DefaultPreemption")
        return None

    q = make_queue(clock, events, gate)
    q.add(pod("p"))
    holding[0] = False
    victim = pod_info_from(make_pod("victim", node="n1"))
    assert q.move_all(victim_gone, victim, None) == 0 and [g.pod.name for g in q.gated_pods()] == ["p"]


@pytest.mark.parametrize(
    "members, attempts, expected",
    [
        (1, 1, 1.0),
        (1, 8, 10.0),
        (4, 4, 8.0),
        (4, 5, 16.0),
        (4, 8, 20.0),  # 10 s x sqrt(4)
        (9, 8, 30.0),  # 10 s x sqrt(9)
    ],
)
def test_a_pod_groups_backoff_ceiling_grows_with_the_square_root_of_its_size(members, attempts, expected) -> None:
    """``calculateBackoffDuration`` (backoff_queue.go): a pod group entity's maximum backoff is
    podMaxBackoffSeconds times the square root of its pod count; a lone pod's is the maximum."""
    q = make_queue(VirtualClock())
    group = QueuedPodGroupInfo(
        key=("default", "g"),
        pod_group={"metadata": {"name": "g", "namespace": "default"}},
        members=[QueuedPodInfo(pod(f"m{i}"), 0.0) for i in range(members)],
        timestamp=0.0,
        unschedulable_count=attempts,
    )
    entity = group if members > 1 else QueuedPodInfo(pod("alone"), 0.0, unschedulable_count=attempts)
    assert q.backoff_duration(entity) == pytest.approx(expected)
