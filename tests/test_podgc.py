"""The pod garbage collector (``pkg/controller/podgc``): past ``--terminated-pod-gc-threshold``
the oldest finished pods are deleted, every 20 s; pods of a node gone for the 40 s quarantine are
marked Failed with DisruptionTarget/DeletionByPodGC and deleted. On the in-process cluster, with
virtual time, as kube-controller-manager runs it."""

from __future__ import annotations

from typing import Any

from kubesched.client.object_client import StoreObjects
from kubesched.controllers.manager import WORKLOAD_CONTROLLERS, ControllerManager, select
from kubesched.testing import Cluster


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}},
    }


def with_podgc(cluster: Cluster, threshold: int) -> None:
    cluster.controllers = ControllerManager(
        StoreObjects(cluster.store),
        [*WORKLOAD_CONTROLLERS, "pod-garbage-collector-controller"],
        terminated_pod_gc_threshold=threshold,
    )


def test_finished_pods_past_the_threshold_go_oldest_first():
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {
            "completions": 6,
            "parallelism": 2,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}},
        },
    }
    cluster = Cluster(node("n1"), workloads=True, run_seconds=1.0)
    with_podgc(cluster, threshold=3)
    cluster.create(job)
    for _ in range(8):
        cluster.advance(1.0)
    finished = [p for p in cluster.store.list("Pod")[0] if p["status"].get("phase") == "Succeeded"]
    assert len(finished) == 6
    order = sorted(finished, key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"]))
    cluster.advance(20.0)  # the collector's period
    left = {p["metadata"]["name"] for p in cluster.store.list("Pod")[0]}
    assert left == {p["metadata"]["name"] for p in order[3:]}  # byEvictionAndCreationTimestamp
    job_status = cluster.store.get("Job", "default", "batch")["status"]
    assert job_status["succeeded"] == 6  # counted before they went (the tracking finalizer)


def test_pods_of_a_deleted_node_are_failed_and_deleted_after_the_quarantine():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stranded", "namespace": "default"},
        "spec": {"nodeName": "gone", "containers": [{"name": "c", "image": "x"}]},
    }
    cluster = Cluster(node("n1"), node("gone"), pod, workloads=True)
    with_podgc(cluster, threshold=12_500)
    cluster.settle()
    watch = cluster.store.watch(["Pod"], cluster.store.resource_version)
    cluster.store.delete("Node", "", "gone")
    cluster.advance(30.0)
    assert cluster.store.try_get("Pod", "default", "stranded") is not None  # still in quarantine
    cluster.advance(40.0)
    assert cluster.store.try_get("Pod", "default", "stranded") is None
    failed = [e.obj for e in watch.drain() if e.type == "MODIFIED" and e.obj["status"].get("phase") == "Failed"]
    assert len(failed) == 1
    cond = next(c for c in failed[0]["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (cond["reason"], cond["message"]) == ("DeletionByPodGC", "PodGC: node no longer exists")


def test_the_flag_names_it_as_kube_controller_manager_does():
    assert "pod-garbage-collector-controller" in select("*")
    assert select("*,-podgc") == [n for n in select("*") if n != "pod-garbage-collector-controller"]


def test_a_pod_terminating_on_an_out_of_service_node_is_failed_and_deleted():
    """``gcTerminating``: a bound pod deleted while its node's kubelet is gone stays Terminating (no
    kubelet confirms it, as on kube-apiserver) until the node, not Ready, is tainted
    ``node.kubernetes.io/out-of-service``; then it is failed (no condition) and deleted."""
    from kubesched.kubelet.node import STOPPED_ANNOTATION

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stuck", "namespace": "default"},
        "spec": {"nodeName": "n2", "containers": [{"name": "c", "image": "x"}], "terminationGracePeriodSeconds": 5},
    }
    cluster = Cluster(node("n1"), node("n2"), pod, workloads=True)
    with_podgc(cluster, threshold=12_500)
    cluster.settle()

    def annotate(o: dict[str, Any]) -> dict[str, Any]:
        return {**o, "metadata": {**o["metadata"], "annotations": {STOPPED_ANNOTATION: "true"}}}

    cluster.store.mutate("Node", "", "n2", annotate)  # its kubelet stops
    cluster.store.delete("Pod", "default", "stuck")
    cluster.advance(60.0)
    stuck = cluster.store.try_get("Pod", "default", "stuck")
    assert stuck is not None and stuck["metadata"].get("deletionTimestamp")  # past its grace period

    def out_of_service(o: dict[str, Any]) -> dict[str, Any]:
        taint = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}
        spec = {**(o.get("spec") or {}), "taints": [*((o.get("spec") or {}).get("taints") or []), taint]}
        status = {**(o.get("status") or {}), "conditions": [{"type": "Ready", "status": "False"}]}
        return {**o, "spec": spec, "status": status}

    watch = cluster.store.watch(["Pod"], cluster.store.resource_version)
    cluster.store.mutate("Node", "", "n2", out_of_service)
    cluster.advance(20.0)  # the collector's period
    assert cluster.store.try_get("Pod", "default", "stuck") is None
    failed = [e.obj for e in watch.drain() if e.type == "MODIFIED" and e.obj["status"].get("phase") == "Failed"]
    assert len(failed) == 1
    assert not any(c["type"] == "DisruptionTarget" for c in failed[0]["status"].get("conditions") or [])
