"""Event series as client-go's events broadcaster writes them (``tools/events``): isomorphic
events within 6 minutes become one Event whose ``series`` counts them, written on the second
occurrence, refreshed every 30 minutes and finished after 6 quiet minutes. Checked on the
bookkeeping, on the in-process store (a virtual clock), and over HTTP against a real API server
with the remote writer."""

from __future__ import annotations

import asyncio

import pytest
from tests.live import Server

from kubesched.client import InProcessClient
from kubesched.client.eventseries import FINISH_TIME, REFRESH_TIME, EventSeriesCache, event_key
from kubesched.cluster.event_conversion import EventRecorder
from kubesched.cluster.store import Store

POD = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7"}}
PREEMPTOR = {"kind": "Pod", "metadata": {"name": "q", "namespace": "ns", "uid": "u2", "resourceVersion": "3"}}


def ev(recorder: EventRecorder, now: float = 0.0, **kw):
    args = {
        "type_": "Warning",
        "reason": "FailedScheduling",
        "action": "Scheduling",
        "regarding": POD,
        "message": "0/1 nodes are available: 1 Insufficient cpu.",
        "related": None,
    }
    args.update(kw)
    return recorder.event(now, **args)


@pytest.mark.parametrize(
    ("change", "same"),
    [
        ({"message": "0/2 nodes are available: 2 Insufficient memory."}, True),  # the note is not in the key
        ({"reason": "Scheduled"}, False),
        ({"type_": "Normal"}, False),
        ({"action": "Binding"}, False),
        ({"regarding": {**POD, "metadata": {**POD["metadata"], "resourceVersion": "8"}}}, False),
        ({"regarding": {**POD, "metadata": {**POD["metadata"], "uid": "other"}}}, False),
        ({"related": PREEMPTOR}, False),
    ],
)
def test_what_makes_two_events_isomorphic(change, same):
    r = EventRecorder("default-scheduler", "kubesched")
    assert (event_key(ev(r)) == event_key(ev(r, **change))) is same
    other = EventRecorder("default-scheduler", "another-instance")
    assert event_key(ev(r)) != event_key(ev(other))


def test_second_occurrence_starts_a_series_and_later_ones_only_count():
    r, cache = EventRecorder("default-scheduler", "kubesched"), EventSeriesCache(0.0)
    first = cache.observe(ev(r, 1.0), 1.0)
    assert first is not None and "series" not in first
    second = cache.observe(ev(r, 2.5, message="another note"), 2.5)
    assert second is not None
    assert second["metadata"]["name"] == first["metadata"]["name"]  # the first event, PATCHed
    assert second["note"] == first["note"]
    assert second["series"] == {"count": 2, "lastObservedTime": "2026-01-01T00:00:02.500000Z"}
    assert cache.observe(ev(r, 3.0), 3.0) is None
    assert cache.observe(ev(r, 4.0), 4.0) is None
    assert second["series"]["count"] == 2  # what was handed out does not change afterwards
    # at 30 minutes both rounds are due: the refresh writes the series, the finish writes it
    # again (quiet for more than 6 minutes) and forgets it
    rounds = cache.due(REFRESH_TIME)
    assert [(d.finishing, d.event["series"]["count"]) for d in rounds] == [(False, 4), (True, 4)]
    assert rounds[0].event["series"]["lastObservedTime"] == "2026-01-01T00:00:04.000000Z"
    assert len(cache) == 0


def test_finish_round_writes_quiet_series_once_and_forgets_old_singletons():
    r, cache = EventRecorder("default-scheduler", "kubesched"), EventSeriesCache(0.0)
    for t in (10.0, 20.0, 30.0):
        cache.observe(ev(r, t), t)
    cache.observe(ev(r, 40.0, reason="Scheduled", type_="Normal", action="Binding"), 40.0)  # a singleton
    assert cache.due(FINISH_TIME - 1) == []
    assert cache.due(FINISH_TIME) == []  # the first round: nothing has been quiet for 6 minutes yet
    cache.observe(ev(r, 400.0, regarding=PREEMPTOR), 400.0)
    cache.observe(ev(r, 410.0, regarding=PREEMPTOR), 410.0)  # a series still going on at the next round
    done = cache.due(2 * FINISH_TIME)
    assert [(d.finishing, d.event["series"]["count"], d.event["regarding"]["name"]) for d in done] == [(True, 3, "p")]
    assert len(cache) == 1  # the preemptor's series is kept; the pod's series and the singleton are gone
    again = cache.observe(ev(r, 800.0), 800.0)  # after the series finished: a new event
    assert again is not None and "series" not in again
    cache.restore(done[0])  # a failed final write is kept for the next round, unless replaced
    assert len(cache) == 2


def test_a_failed_final_write_is_tried_at_the_next_round():
    r, cache = EventRecorder("default-scheduler", "kubesched"), EventSeriesCache(0.0)
    cache.observe(ev(r, 1.0), 1.0)
    cache.observe(ev(r, 2.0), 2.0)
    [done] = cache.due(FINISH_TIME + 5)
    cache.restore(done)
    [again] = cache.due(2 * FINISH_TIME + 10)
    assert again.finishing and again.event["series"]["count"] == 2
    assert cache.due(3 * FINISH_TIME + 20) == [] and len(cache) == 0


def stored_events(store: Store) -> list[dict]:
    return sorted(store.list("Event")[0], key=lambda e: e["metadata"]["name"])


def test_in_process_client_stores_series_as_upstream_writes_them():
    store = Store(seed=1)
    client = InProcessClient(store)
    for _ in range(5):
        client.record_event("Warning", "FailedScheduling", "Scheduling", POD, "0/1 nodes are available.")
    [stored] = stored_events(store)
    assert stored["kind"] == "Event" and stored["involvedObject"]["name"] == "p"
    assert stored["series"]["count"] == 2  # 3 more are counted in memory only
    client.flush_events(final=True)
    [stored] = stored_events(store)
    assert stored["series"]["count"] == 5
    assert stored["message"] == "0/1 nodes are available."


def test_in_process_rounds_run_on_the_store_clock_and_recreate_a_deleted_event():
    store = Store(seed=1)
    client = InProcessClient(store)
    clock = store.clock
    for _ in range(3):
        client.record_event("Warning", "FailedScheduling", "Scheduling", POD, "m")
    [stored] = stored_events(store)
    store.delete("Event", "ns", stored["metadata"]["name"])
    clock.advance_to(FINISH_TIME + 1)
    # the next event runs the finish round first: the PATCH finds no event, so it is created
    client.record_event("Normal", "Scheduled", "Binding", PREEMPTOR, "Successfully assigned ns/q to n")
    events = stored_events(store)
    assert [(e["reason"], (e.get("series") or {}).get("count")) for e in events] == [
        ("FailedScheduling", 3),
        ("Scheduled", None),
    ]


def test_preempted_event_names_the_preemptor_as_related():
    store = Store(seed=1)
    InProcessClient(store).record_event("Normal", "Preempted", "Preempting", POD, "Preempted by pod u2", PREEMPTOR)
    [stored] = stored_events(store)
    assert stored["related"]["name"] == "q" and stored["related"]["uid"] == "u2"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("series") / "data").start()
    assert s.request("POST", "/api/v1/namespaces", {"metadata": {"name": "ns"}})[0] == 201
    yield s
    s.stop()


def listed(server: Server, name: str) -> list[dict]:
    _, body = server.request("GET", "/apis/events.k8s.io/v1/namespaces/ns/events")
    return [e for e in body["items"] if e["metadata"]["name"] == name]


def test_remote_writer_patches_series_over_http(server):
    """The writer's requests against a real server: a create, a strategic-merge PATCH of the
    series, and at the finish round the final count; a series whose event was deleted is
    created again with its series."""
    from kubernetes_asyncio.config import new_client_from_config

    from kubesched.client.eventwriter import EventWriter, now

    async def run() -> tuple[list[dict], list[dict], list[dict]]:
        api = await new_client_from_config(config_file=str(server.kubeconfig))
        try:
            writer = EventWriter(api, retry_sleep=0.05)
            writer.series = EventSeriesCache(now(), finish_time=1.0, refresh_time=3600.0)
            rounds = asyncio.create_task(writer.run_rounds())
            r = EventRecorder("default-scheduler", "kubesched-test")
            first = ev(r, now())
            name = first["metadata"]["name"]
            writer.record(first)
            for _ in range(3):
                writer.record(ev(r, now()))
            await writer.drain(5)
            after_four = await asyncio.to_thread(listed, server, name)
            await asyncio.sleep(2.5)  # the finish round writes the count held in memory
            finished = await asyncio.to_thread(listed, server, name)
            # a new series whose event is gone when its PATCH comes: created with its series
            writer.series = EventSeriesCache(now(), finish_time=60.0, refresh_time=3600.0)
            writer.record(ev(r, now(), reason="Other"))
            await writer.drain(5)
            _, body = await asyncio.to_thread(server.request, "GET", "/apis/events.k8s.io/v1/namespaces/ns/events")
            [other] = [e for e in body["items"] if e["reason"] == "Other"]
            await asyncio.to_thread(
                server.request, "DELETE", f"/apis/events.k8s.io/v1/namespaces/ns/events/{other['metadata']['name']}"
            )
            writer.record(ev(r, now(), reason="Other"))
            await writer.drain(5)
            recreated = await asyncio.to_thread(listed, server, other["metadata"]["name"])
            rounds.cancel()
            return after_four, finished, recreated
        finally:
            await api.close()

    after_four, finished, recreated = asyncio.run(run())
    assert [e["series"]["count"] for e in after_four] == [2]
    assert [e["series"]["count"] for e in finished] == [4]
    assert [e["series"]["count"] for e in recreated] == [2]


def test_a_pod_that_keeps_failing_gets_one_series():
    """As upstream: the first FailedScheduling regards the pod before its PodScheduled condition
    is written; every later attempt finds the condition as it is, writes nothing, so the pod's
    resourceVersion stays and those events are one series."""
    from helpers import make_node, make_pod
    from kubesched.testing import Cluster

    c = Cluster(make_node("n1", cpu="1"), make_pod("big", cpu="2"))
    c.settle()
    condition = next(x for x in c.store.get("Pod", "default", "big")["status"]["conditions"])
    for _ in range(4):
        c.advance(301)  # flushUnschedulablePodsLeftover: another attempt
    c.client.flush_events(final=True)
    failed = sorted(
        (e for e in c.store.list("Event")[0] if e["reason"] == "FailedScheduling"),
        key=lambda e: int(e["involvedObject"]["resourceVersion"]),
    )
    assert [(e.get("series") or {}).get("count", 1) for e in failed] == [1, 4]
    assert failed[1]["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    after = next(x for x in c.store.get("Pod", "default", "big")["status"]["conditions"])
    assert after == condition  # written once: its lastTransitionTime is the first failure's


@pytest.mark.parametrize(
    ("old", "new", "written"),
    [
        (None, {"status": "False", "reason": "Unschedulable", "message": "m"}, "stamped"),
        (
            {"status": "False", "reason": "Unschedulable", "message": "m"},
            {"status": "False", "reason": "Unschedulable", "message": "m"},
            None,
        ),
        (
            {"status": "False", "reason": "Unschedulable", "message": "m"},
            {"status": "False", "reason": "Unschedulable", "message": "m2"},
            "kept",
        ),
        (
            {"status": "False", "reason": "Unschedulable", "message": "m"},
            {"status": "False", "reason": "SchedulerError", "message": "m"},
            "kept",
        ),
        (
            {"status": "True", "reason": "", "message": ""},
            {"status": "False", "reason": "Unschedulable", "message": "m"},
            "stamped",
        ),
    ],
)
def test_update_pod_condition(old, new, written):
    """``UpdatePodCondition``: unchanged → nothing to write; the same status keeps the old
    lastTransitionTime; a new status (or a new condition) is stamped by the writer."""
    from kubesched.api.pod import updated_pod_condition

    conditions = [] if old is None else [{"type": "PodScheduled", "lastTransitionTime": "2026-01-01T00:00:00Z", **old}]
    got = updated_pod_condition({"status": {"conditions": conditions}}, {"type": "PodScheduled", **new})
    if written is None:
        assert got is None
    elif written == "kept":
        assert got == {"type": "PodScheduled", **new, "lastTransitionTime": "2026-01-01T00:00:00Z"}
    else:
        assert got == {"type": "PodScheduled", **new}


def test_up_runs_the_rounds_without_another_event():
    """Under ``kubesched up`` the rounds run on their own timer: a series' count held in memory
    reaches the store although the scheduler records nothing more."""
    from kubesched.app.apiserver import event_rounds
    from kubesched.clock import WallClock

    async def run() -> list[dict]:
        store = Store(WallClock(asyncio.get_running_loop()))
        client = InProcessClient(store)
        client.event_series = EventSeriesCache(store.clock.now(), finish_time=0.2, refresh_time=3600.0)
        for _ in range(3):
            client.record_event("Warning", "FailedScheduling", "Scheduling", POD, "m")
        stop = asyncio.Event()
        task = asyncio.create_task(event_rounds(client, stop))
        await asyncio.sleep(0.8)
        stop.set()
        await task
        return stored_events(store)

    [stored] = asyncio.run(run())
    assert stored["series"]["count"] == 3


@pytest.mark.parametrize(
    ("event", "last_seen"),
    [
        ({"eventTime": "2026-01-01T00:00:00.000000Z"}, "100s"),  # a singleton: its eventTime
        (
            {
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "series": {"count": 4, "lastObservedTime": "2026-01-01T00:01:30.000000Z"},
            },
            "10s",
        ),  # a series: when it was last observed
        ({"firstTimestamp": "2026-01-01T00:00:40Z", "lastTimestamp": "2026-01-01T00:01:00Z"}, "40s"),
        ({"firstTimestamp": "2026-01-01T00:00:40Z"}, "60s"),  # no lastTimestamp: the first
    ],
)
def test_events_table_last_seen_as_printers_go(event, last_seen):
    from kubesched.apiserver.handlers.printers.core import _event_row

    row = _event_row({"type": "Warning", "reason": "R", "involvedObject": {"kind": "Pod", "name": "p"}, **event}, 100.0)
    assert row[0] == last_seen and row[3] == "pod/p"
