"""The scheduler's event writer against a real API server that fails requests: events are tried
again as client-go's broadcaster tries them (up to 12 times), so none is lost to a passing
fault, and one the server refuses outright is not asked again."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.live import Server

from kubesched.client.connection import api_client
from kubesched.client.eventwriter import MAX_TRIES, EventWriter, retryable


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("events") / "data", args=["--fault-injection"]).start()
    yield s
    s.stop()


def event(i: int) -> dict:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"p{i}.retry", "namespace": "default"},
        "eventTime": "2026-11-25T10:00:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "kubesched-test",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "note": "0/1 nodes are available",
        "type": "Warning",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": f"p{i}"},
    }


async def write_all(kubeconfig: str, events: list[dict]) -> None:
    """Record the events, as the remote client's loop does, and wait for their writes."""
    api = await api_client(kubeconfig)
    try:
        writer = EventWriter(api, retry_sleep=0.05)
        for ev in events:
            writer.record(ev)
        await writer.drain(20)
        assert writer.held == 0
        writer.close()
    finally:
        await api.close()


def test_no_event_is_lost_to_failing_requests(server):
    assert server.request("PUT", "/debug/kubesched/faults", {"failRate": 0.3})[0] == 200
    try:
        asyncio.run(write_all(str(server.kubeconfig), [event(i) for i in range(150)]))
    finally:
        server.request("PUT", "/debug/kubesched/faults", {})
    deadline = time.monotonic() + 10
    while True:
        _, listed = server.request("GET", "/apis/events.k8s.io/v1/namespaces/default/events")
        names = {e["metadata"]["name"] for e in listed["items"] if e["metadata"]["name"].endswith(".retry")}
        if len(names) == 150 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert names == {f"p{i}.retry" for i in range(150)}


@pytest.mark.parametrize(
    ("status", "again"), [(None, True), (429, True), (500, True), (503, True), (400, False), (409, False), (422, False)]
)
def test_which_failures_are_tried_again(status, again):
    assert retryable(status) is again
    assert MAX_TRIES == 12
