"""The Job controller's orphan pods (``pkg/controller/job``: ``deleteJob``, ``syncOrphanPod``): a
pod that holds ``batch.kubernetes.io/job-tracking`` while its Job is gone, replaced by another
of the same name, or finished loses the finalizer, so no deletion of a Job leaves pods
Terminating and holding their node; a pod of a live Job keeps it."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.client.object_client import StoreObjects
from kubesched.controllers.job import TRACKING_FINALIZER, JobController
from kubesched.controllers.manager import WORKLOAD_CONTROLLERS, ControllerManager
from kubesched.testing import Cluster


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def job(name: str = "j") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parallelism": 2,
            "completions": 4,
            "template": {
                "metadata": {"annotations": {"kubesched.io/run-seconds": "-1"}},  # runs until deleted
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def pods(cluster: Cluster) -> list[dict[str, Any]]:
    return cluster.store.list("Pod")[0]


def running_job() -> Cluster:
    cluster = Cluster(node("n1"), job(), workloads=True)
    cluster.settle()
    assert len(pods(cluster)) == 2
    assert all(TRACKING_FINALIZER in p["metadata"]["finalizers"] for p in pods(cluster))
    return cluster


@pytest.mark.parametrize(
    ("propagation", "left"),
    [
        pytest.param("Background", 0, id="background-pods-deleted"),
        pytest.param("Foreground", 0, id="foreground-pods-deleted"),
        pytest.param("Orphan", 2, id="orphan-pods-kept-running"),
        pytest.param(None, 2, id="default-orphan-for-batch-v1"),
    ],
)
def test_a_deleted_jobs_pods_lose_the_tracking_finalizer(propagation, left):
    cluster = running_job()
    cluster.store.delete("Job", "default", "j", propagation=propagation)
    cluster.advance(5.0)
    cluster.advance(5.0)
    remaining = pods(cluster)
    assert len(remaining) == left
    assert all(TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or []) for p in remaining)
    assert all(not p["metadata"].get("deletionTimestamp") for p in remaining)
    assert cluster.store.try_get("Job", "default", "j") is None


def test_a_live_jobs_pods_keep_the_finalizer_and_a_new_job_of_the_same_name_does_not_adopt_them():
    cluster = running_job()
    cluster.store.delete("Job", "default", "j", propagation="Orphan")
    cluster.advance(1.0)  # the garbage collector orphans the pods, then the Job goes
    cluster.create(job())  # another Job named j: another UID
    cluster.advance(5.0)
    old = [p for p in pods(cluster) if not (p["metadata"].get("ownerReferences"))]
    assert len(old) == 2 and all(not p["metadata"].get("finalizers") for p in old)
    new = [p for p in pods(cluster) if p["metadata"].get("ownerReferences")]
    assert len(new) == 2 and all(TRACKING_FINALIZER in p["metadata"]["finalizers"] for p in new)


def test_after_a_restart_pods_whose_job_went_meanwhile_are_released():
    """Pods left Terminating by a Job deleted while no controller ran (the defect's data
    directories): a controller manager started on that store releases them."""
    cluster = Cluster(node("n1"), job(), workloads=True)
    cluster.settle()
    assert any(isinstance(c, JobController) for c in cluster.controllers.controllers)
    # the controllers stop; the Job and its pods are deleted meanwhile
    cluster.controllers = ControllerManager(StoreObjects(cluster.store), [])
    cluster.store.delete("Job", "default", "j", propagation="Background")
    for p in pods(cluster):
        cluster.store.delete("Pod", "default", p["metadata"]["name"])
    cluster.advance(5.0)
    assert len(pods(cluster)) == 2 and all(p["metadata"].get("deletionTimestamp") for p in pods(cluster))
    cluster.controllers = ControllerManager(StoreObjects(cluster.store), list(WORKLOAD_CONTROLLERS))
    assert any(isinstance(c, JobController) for c in cluster.controllers.controllers)
    cluster.advance(5.0)
    assert pods(cluster) == []
