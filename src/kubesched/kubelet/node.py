"""A hollow node as the embedded cluster makes one: the Node object (scheduler_perf's
``node-default.yaml`` shape, with a complete ``status.nodeInfo`` once its kubelet runs), the
annotation that stops its kubelet, and the hollow CSI driver every node runs with its default
StorageClass."""

from __future__ import annotations

from typing import Any

KUBELET_VERSION = "v1.37.2-kubesched"
# on a Node: its hollow kubelet is stopped (``kubesched node stop``): no Lease renewal, no pod
# started or confirmed deleted, until the annotation goes (``kubesched node start``)
STOPPED_ANNOTATION = "kubesched.io/kubelet-stopped"


def stopped(node: dict[str, Any] | None) -> bool:
    return bool(((node or {}).get("metadata") or {}).get("annotations", {}).get(STOPPED_ANNOTATION))


HOLLOW_DRIVER = "hollow.csi.kubesched.io"  # the CSI driver every hollow node runs
ATTACH_LIMIT = 32  # volumes of it a hollow node can attach (its CSINode's allocatable count)
ZONE_LABEL = "topology.kubernetes.io/zone"

NODE_INFO = {
    "machineID": "",
    "systemUUID": "",
    "bootID": "",
    "kernelVersion": "6.1.0-kubesched",
    "osImage": "kubesched hollow node",
    "containerRuntimeVersion": "kubesched://1.0",
    "kubeletVersion": KUBELET_VERSION,
    "kubeProxyVersion": "",
    "operatingSystem": "linux",
    "architecture": "amd64",
}


def fake_node(name: str, *, cpu: str = "4", memory: str = "32Gi", pods: str = "110") -> dict[str, Any]:
    """A node like scheduler_perf's ``node-default.yaml`` (4 CPU, 32Gi, 110 pods)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kubesched",
            },
        },
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def default_storage_class() -> dict[str, Any]:
    """The default StorageClass of a cluster whose nodes run the hollow driver, as kind ships
    ``standard``: provisioned by the driver, bound when the first consumer is scheduled."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": HOLLOW_DRIVER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
