"""What a snapshot reads: every resource kube-scheduler v1.37's informers list (``scheduler.go``,
the plugins' ``EventsToRegister`` and the volume binder) and the workloads that own pods, in the
order a create needs them (namespaces and classes before what names them, owners before what they
own, pods last)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Listed:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.plural}"


SNAPSHOT_RESOURCES: tuple[Listed, ...] = (
    Listed("", "v1", "namespaces", "Namespace", False),
    Listed("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
    Listed("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
    Listed("", "v1", "limitranges", "LimitRange", True),
    Listed("", "v1", "nodes", "Node", False),
    Listed("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    Listed("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    Listed("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    Listed("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    Listed("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
    Listed("", "v1", "persistentvolumes", "PersistentVolume", False),
    Listed("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    Listed("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    Listed("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    Listed("resource.k8s.io", "v1", "devicetaintrules", "DeviceTaintRule", False),
    Listed("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    Listed("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True),
    Listed("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    # the workloads whose controllers the planning commands run: drain's replacements are made by
    # them, and a pod whose owner is absent would be taken for an orphan by the garbage collector
    Listed("apps", "v1", "deployments", "Deployment", True),
    Listed("apps", "v1", "daemonsets", "DaemonSet", True),
    Listed("batch", "v1", "cronjobs", "CronJob", True),
    Listed("batch", "v1", "jobs", "Job", True),
    # the owners whose selectors topology spread's system defaults read (SelectorSpread's listers)
    Listed("", "v1", "services", "Service", True),
    Listed("", "v1", "replicationcontrollers", "ReplicationController", True),
    Listed("apps", "v1", "replicasets", "ReplicaSet", True),
    Listed("apps", "v1", "statefulsets", "StatefulSet", True),
    # workload-aware scheduling, where the server serves it (GenericWorkload)
    Listed("scheduling.k8s.io", "v1beta1", "workloads", "Workload", True),
    Listed("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", True),
    Listed("", "v1", "pods", "Pod", True),
)
