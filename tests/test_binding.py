"""Binding cycles off the scheduling thread (upstream's binding goroutine): the next pod is
scheduled while a binding waits on the API server, the assumed pod holds its room meanwhile, and
the outcome is taken back on the scheduler's thread."""

from __future__ import annotations

import concurrent.futures
import gc
import threading
import time
from typing import ClassVar

import pytest

from helpers import make_node, make_pod
from kubesched.api.errors import ApiError, Conflict
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import BindPlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.binding import InlineBinding, ThreadedBinding
from kubesched.scheduler.plugins import in_tree_registry
from kubesched.testing import Cluster


class Latch(BindPlugin):
    """Binds (without writing to the store) once released; pods annotated fail=<msg> fail."""

    name = "Latch"
    release = threading.Event()
    entered = threading.Event()
    threads: ClassVar[list[str]] = []

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        Latch.threads.append(threading.current_thread().name)
        Latch.entered.set()
        assert Latch.release.wait(10)
        annotations = pod.obj["metadata"].get("annotations") or {}
        if "fail" in annotations:
            return Status.error(annotations["fail"])
        return None


@pytest.fixture
def latch() -> type[Latch]:
    Latch.release, Latch.entered, Latch.threads = threading.Event(), threading.Event(), []
    return Latch


def _cluster(binding: ThreadedBinding) -> Cluster:
    registry = in_tree_registry()
    registry.register("Latch", Latch)
    cfg = {"profiles": [{"plugins": {"bind": {"disabled": [{"name": "*"}], "enabled": [{"name": "Latch"}]}}}]}
    return Cluster(make_node("n", cpu="2"), config=cfg, registry=registry, binding=binding)


def _wait_drained(c: Cluster, binding: ThreadedBinding) -> None:
    deadline = time.monotonic() + 10
    while binding.in_flight() and time.monotonic() < deadline:
        c.sched.process_events()
        time.sleep(0.005)
    assert binding.in_flight() == 0


def test_next_pod_is_scheduled_while_a_binding_is_in_flight(latch: type[Latch]) -> None:
    binding = ThreadedBinding(workers=2)
    c = _cluster(binding)
    c.create(make_pod("first", cpu="2"))
    c.settle()
    assert latch.entered.wait(5)
    assert binding.in_flight() == 1
    assert c.sched.cache.is_assumed("uid-default-first")
    # the scheduling thread goes on: the second pod's cycle sees the first one assumed
    c.create(make_pod("second", cpu="1"))
    c.settle()
    assert c.sched.last_message["default/second"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert c.events("Scheduled") == []
    latch.release.set()
    _wait_drained(c, binding)
    assert c.events("Scheduled") == ["Successfully assigned default/first to n"]
    assert "uid-default-first" in c.sched.cache.binding_finished
    assert latch.threads[0].startswith("kubesched-bind")
    binding.close()


def test_a_failed_binding_forgets_the_pod_and_frees_its_room(latch: type[Latch]) -> None:
    binding = ThreadedBinding(workers=2)
    c = _cluster(binding)
    bad = make_pod("bad", cpu="2")
    bad["metadata"]["annotations"] = {"fail": "connection refused"}
    c.create(bad)
    c.settle()
    assert latch.entered.wait(5)
    c.create(make_pod("waiting", cpu="2"))
    c.settle()
    assert c.sched.last_message["default/waiting"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    latch.release.set()
    _wait_drained(c, binding)
    assert not c.sched.cache.is_assumed("uid-default-bad")
    assert c.sched.last_message["default/bad"] == 'running Bind plugin "Latch": connection refused'
    # the freed room moved the waiting pod out of unschedulablePods (AssignedPodDelete); its
    # backoff over, it is scheduled and bound
    c.advance(2)
    _wait_drained(c, binding)
    assert "Successfully assigned default/waiting to n" in c.events("Scheduled")
    binding.close()


def _drain_one(binding: ThreadedBinding) -> None:
    deadline = time.monotonic() + 5
    while not binding.pending():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    assert binding.drain() == 1


def test_threaded_binding_limits_what_is_in_flight_with_hysteresis() -> None:
    binding = ThreadedBinding(workers=4, max_in_flight=4)
    gates = [threading.Event() for _ in range(4)]
    results: list[str] = []
    for gate in gates:
        assert not binding.saturated()
        binding.submit(gate.wait, lambda st: results.append(threading.current_thread().name))
    assert binding.saturated()
    gates[0].set()
    _drain_one(binding)
    assert binding.in_flight() == 3
    assert binding.saturated()  # held until half are taken back
    gates[1].set()
    _drain_one(binding)
    assert binding.in_flight() == 2
    assert not binding.saturated()
    gates[2].set()
    gates[3].set()
    binding.close()
    assert binding.in_flight() == 0
    # done callbacks run on the thread that drains, never on a worker
    assert results == [threading.current_thread().name] * 4


def test_a_binding_that_raises_is_an_error_status() -> None:
    def boom() -> Status | None:
        raise ConnectionResetError("reset by peer")

    got: list[Status | None] = []
    InlineBinding().submit(boom, got.append)
    threaded = ThreadedBinding(workers=1)
    threaded.submit(boom, got.append)
    threaded.close()
    assert [(s.code, s.message()) for s in got if s is not None] == [
        (Code.ERROR, "binding failed: reset by peer"),
        (Code.ERROR, "binding failed: reset by peer"),
    ]


def test_a_failed_status_patch_is_logged_and_the_pod_stays_queued() -> None:
    """``Error updating pod``: the API refusing the PodScheduled patch does not stop the loop."""
    c = Cluster(make_node("n", cpu="1"))

    class Refusing:
        """The cluster's client, but the API refuses status patches (a compiled client's
        methods cannot be replaced on the instance, so the scheduler gets this one)."""

        def __init__(self, inner: object) -> None:
            self._inner = inner
            self.refused = 0

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

        def patch_pod_status(self, *args: object, **kwargs: object) -> None:
            self.refused += 1
            raise ApiError("the server is currently unable to handle the request")

    refusing = Refusing(c.client)
    c.sched.client = refusing  # type: ignore[assignment]
    c.create(make_pod("big", cpu="2"), make_pod("small", cpu="100m"))
    c.settle()
    assert c.sched.last_message["default/big"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert c.node_of("small") == "n"
    assert c.sched.queue.get("uid-default-big") is not None
    assert refusing.refused >= 1


class Sender(BindPlugin):
    """Binds by one request handed off without waiting, as DefaultBinder's ``send`` over HTTP:
    the answer arrives on another thread; pods annotated fail=<msg> are refused."""

    name = "Sender"

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise AssertionError("a binding that can be sent is sent")

    def send(self, state: CycleState, pod: PodInfo, node_name: str) -> concurrent.futures.Future[None]:
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        message = (pod.obj["metadata"].get("annotations") or {}).get("fail")
        answer = (future.set_exception, Conflict(message)) if message else (future.set_result, None)
        threading.Thread(target=answer[0], args=(answer[1],)).start()
        return future


def test_a_sent_binding_is_taken_back_and_leaves_no_cycles() -> None:
    """A sent binding's outcome comes back on the scheduler's thread (an error as Bind's own), and
    nothing of the cycle (its pod, CycleState, queued info, the request's future) is left for the
    cyclic collector: reference counting frees it when the binding is done. A closure that held
    itself once left a whole cycle's state per pod to the collector, a fifth of the scheduler's
    CPU over HTTP."""
    registry = in_tree_registry()
    registry.register("Sender", Sender)
    cfg = {"profiles": [{"plugins": {"bind": {"disabled": [{"name": "*"}], "enabled": [{"name": "Sender"}]}}}]}
    binding = ThreadedBinding(workers=2)
    c = Cluster(make_node("n", cpu="8"), config=cfg, registry=registry, binding=binding)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for i in range(5):
            c.create(make_pod(f"p{i}", cpu="1"))
        refused = make_pod("refused", cpu="1")
        refused["metadata"]["annotations"] = {"fail": 'pods "refused" is already assigned'}
        c.create(refused)
        c.settle()
        _wait_drained(c, binding)
        gc.collect()
        left = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert sorted(c.events("Scheduled")) == [f"Successfully assigned default/p{i} to n" for i in range(5)]
    assert c.sched.last_message["default/refused"] == 'running Bind plugin "Sender": pods "refused" is already assigned'
    assert not c.sched.cache.is_assumed("uid-default-refused")
    assert left.isdisjoint({"CycleState", "QueuedPodInfo", "PodInfo", "SentBind", "Future"}), left
    binding.close()
