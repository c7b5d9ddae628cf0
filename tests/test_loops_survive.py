"""No loop dies (issue: "nothing a tenant sends and no routine race stops the cluster"): an object
one controller cannot sync is logged with the object, counted and retried with the workqueue's
backoff while every other object goes on; the scheduler survives a refused event and any error
of one pod's cycle; each loop's last good sync is reported and ``/readyz`` fails for a stuck one.
In process first (the same controllers and scheduler ``kubesched up`` runs), then over HTTP
against ``kubesched up`` restarted on a data directory that already holds a malformed object."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from tests.live import Server, wait_for

from kubesched.api.pod import PodInfo
from kubesched.clock import VirtualClock
from kubesched.cluster.sqlite import SQLiteBackend
from kubesched.cluster.store import Store
from kubesched.controllers.workqueue import ItemBackoff
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin
from kubesched.health import LoopHealth
from kubesched.testing import Cluster, in_tree_registry


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }


def deployment(name: str, replicas: Any = 2, strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    if strategy is not None:
        d["spec"]["strategy"] = strategy
    return d


# objects that reached the store before any validation refused them (an older data directory):
# each raised inside its controller and, before the fix, out of the controller manager
MALFORMED = [
    pytest.param(
        "Deployment",
        deployment("bad", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "abc"}}),
        id="deployment-max-surge-abc",
    ),
    pytest.param(
        "DaemonSet",
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "bad", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "bad"}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "abc"}},
                "template": {
                    "metadata": {"labels": {"app": "bad"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        },
        id="daemonset-max-unavailable-abc",
    ),
    pytest.param(
        "StatefulSet",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "bad", "namespace": "default"},
            "spec": {
                "replicas": "three",
                "serviceName": "bad",
                "selector": {"matchLabels": {"app": "bad"}},
                "template": {
                    "metadata": {"labels": {"app": "bad"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        },
        id="statefulset-replicas-not-a-number",
    ),
]


def store_unadmitted(cluster: Cluster, kind: str, obj: dict[str, Any]) -> None:
    """Store ``obj`` as an older version would have: past every admission check."""
    admission, cluster.store.admission = cluster.store.admission, []
    try:
        cluster.store.create(kind, obj)
    finally:
        cluster.store.admission = admission


@pytest.mark.parametrize(("kind", "obj"), MALFORMED)
def test_a_malformed_object_is_logged_counted_and_retried_while_the_rest_goes_on(kind, obj, caplog):
    cluster = Cluster(node("n1"), workloads=True)
    assert cluster.controllers is not None
    store_unadmitted(cluster, kind, obj)
    cluster.create(deployment("good"))
    with caplog.at_level(logging.ERROR, logger="kubesched"):
        cluster.settle()
    # the good Deployment converged: its ReplicaSet, two pods, both bound and Running
    pods = [p for p in cluster.store.list("Pod")[0] if p["metadata"]["name"].startswith("good-")]
    assert len(pods) == 2 and all(p["spec"].get("nodeName") == "n1" for p in pods)
    assert all(p["status"]["phase"] == "Running" for p in pods)
    # the bad one is named in the log and counted against its controller
    loop = f"{kind.lower()}-controller"
    lines = [r.getMessage() for r in caplog.records if "Error syncing" in r.getMessage()]
    assert any(f'loop="{loop}" object="{kind} default/bad"' in line for line in lines), lines
    health = cluster.controllers.health.report()
    assert health[loop]["errors"] >= 1 and f"{kind} default/bad" in str(health[loop]["lastError"])
    # retried with backoff (5 ms, 10 ms, … as the workqueue's), not dropped: counted again later
    before = health[loop]["errors"]
    cluster.advance(1.0)
    assert cluster.controllers.health.report()[loop]["errors"] > before


def test_a_malformed_deployment_is_synced_again_once_mended():
    cluster = Cluster(node("n1"), workloads=True)
    store_unadmitted(cluster, "Deployment", deployment("bad", strategy={"rollingUpdate": {"maxSurge": "abc"}}))
    cluster.settle()
    assert not cluster.store.list("ReplicaSet")[0]

    def mend(o: dict[str, Any]) -> dict[str, Any]:
        return {**o, "spec": {**o["spec"], "strategy": {"type": "RollingUpdate"}}}

    cluster.store.mutate("Deployment", "default", "bad", mend)
    cluster.settle()
    assert len([p for p in cluster.store.list("Pod")[0] if p["spec"].get("nodeName")]) == 2


def test_the_workqueue_backoff_doubles_from_5ms_to_1000s_and_is_forgotten_after_a_good_sync():
    backoff = ItemBackoff()
    assert [backoff.when("k") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert backoff.when("other") == 0.005  # per item
    for _ in range(40):
        last = backoff.when("k")
    assert last == 1000.0
    backoff.forget("k")
    assert backoff.retries("k") == 0 and backoff.when("k") == 0.005


def test_a_refused_scheduled_event_does_not_stop_the_scheduler(caplog):
    """A namespace deleted while its pods are scheduled: the Scheduled event is refused (the
    namespace is terminating); the refusal is logged and every later pod is still scheduled."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}}
    cluster = Cluster(node("n1"), namespace, workloads=True)
    cluster.create(pod("a", "gone"))
    cluster.sched.process_events()
    cluster.store.delete("Namespace", "", "gone")
    with caplog.at_level(logging.ERROR, logger="kubesched"):
        cluster.settle()  # raised the Forbidden out of the scheduling loop before the fix
    assert any("Server rejected event (will not retry!)" in r.getMessage() for r in caplog.records)
    cluster.create(pod("b"))
    cluster.settle()
    assert cluster.node_of("b") == "n1"


class _FlakyFilter(FilterPlugin):
    """A plugin with a bug: its Filter raises for the pod "boom", the first time only."""

    name = "FlakyFilter"
    raised = False

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
        if pod.name == "boom" and not _FlakyFilter.raised:
            _FlakyFilter.raised = True
            raise RuntimeError("a bug in a cycle")
        return None


def test_an_error_in_a_cycle_requeues_the_pod_and_the_scheduler_goes_on(caplog):
    registry = in_tree_registry()
    registry[_FlakyFilter.name] = _FlakyFilter
    _FlakyFilter.raised = False
    config = {
        "profiles": [
            {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": _FlakyFilter.name}]}}}
        ]
    }
    cluster = Cluster(node("n1"), config=config, registry=registry)
    sched = cluster.sched
    cluster.create(pod("boom"), pod("fine"))
    with caplog.at_level(logging.ERROR, logger="kubesched"):
        cluster.settle()
    assert cluster.node_of("fine") == "n1"
    assert sched.health.report()["scheduler"]["errors"] == 1
    assert any('object="Pod default/boom"' in r.getMessage() for r in caplog.records)
    # requeued as a SchedulerError (with backoff): scheduled on its next attempt
    failed = cluster.store.get("Pod", "default", "boom")
    condition = next(c for c in failed["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["reason"] == "SchedulerError" and "a bug in a cycle" in condition["message"]
    cluster.advance(2.0)
    assert cluster.node_of("boom") == "n1"


def test_a_loop_without_a_good_sync_for_the_stall_period_is_stuck():
    now = [100.0]
    health = LoopHealth(clock=lambda: now[0], stall=60.0)
    health.register("kubelet")
    health.register("controller-manager")
    now[0] = 150.0
    health.ok("kubelet")
    health.error("controller-manager", "Deployment default/bad", ValueError("x"))
    assert health.stuck() == []
    now[0] = 170.0
    assert health.stuck() == ["controller-manager"]  # errors alone do not make it stuck: time does
    report = health.report()
    assert report["controller-manager"]["stuck"] is True and report["kubelet"]["stuck"] is False
    assert report["controller-manager"]["lastError"] == "Deployment default/bad: ValueError: x"


# -- over HTTP: `kubesched up` on a data directory that holds a malformed Deployment -----------
def seed_data_dir(data_dir: Path) -> None:
    """A data directory whose state.db holds a Deployment no validation refused."""
    data_dir.mkdir(mode=0o700, parents=True)
    store = Store(VirtualClock(), seed=None, backend=SQLiteBackend(data_dir / "state.db"))
    store.create(
        "Deployment", deployment("bad", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "abc"}})
    )
    store.close()


def test_up_restarted_on_a_malformed_object_runs_every_loop_and_reports_them(tmp_path):
    data = tmp_path / "data"
    seed_data_dir(data)
    server = Server(data, command="up", nodes=2).start()
    try:
        status, _ = server.request("POST", "/apis/apps/v1/namespaces/default/deployments", deployment("good"))
        assert status == 201

        def bound() -> bool:
            _, body = server.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dgood")
            items = body["items"]
            return len(items) == 2 and all(p["status"].get("phase") == "Running" for p in items)

        wait_for(bound, timeout=30)
        status, body = server.request("GET", "/debug/kubesched/loops")
        loops = body["loops"]
        assert status == 200 and set(loops) >= {"controller-manager", "kubelet", "scheduler", "deployment-controller"}
        assert loops["deployment-controller"]["errors"] >= 1
        assert "Deployment default/bad" in loops["deployment-controller"]["lastError"]
        assert not any(state["stuck"] for state in loops.values())
        status, body = server.request("GET", "/readyz?verbose", raw=True)
        text = body.decode()
        assert status == 200 and "[+]loop/controller-manager ok" in text and "[+]loop/scheduler ok" in text
        assert text.strip().endswith("readyz check passed")
        assert server.request("GET", "/readyz/loop/kubelet", raw=True) == (200, b"ok")
        assert server.request("GET", "/readyz/loop/nothing", raw=True)[0] == 404
    finally:
        server.stop()
    log = (tmp_path / "data.log").read_text()
    assert 'object="Deployment default/bad"' in log


def test_an_idle_cluster_has_no_stuck_loop():
    """A loop with nothing to do is healthy: the device-taint-eviction loop recorded a good sync
    only when it had work, so an idle cluster's ``/readyz`` failed a minute after its start."""
    from kubesched.client.object_client import StoreObjects
    from kubesched.controllers.manager import ALL, ControllerManager

    cluster = Cluster(node("n1"))
    manager = ControllerManager(StoreObjects(cluster.store), list(ALL))
    manager.sync()
    assert "device-taint-eviction" in manager.health.loops
    later = [manager.health.clock() + 10 * manager.health.stall]
    manager.health.clock = lambda: later[0]
    manager.sync()  # the loops run once more, with nothing changed
    assert manager.health.stuck() == []
