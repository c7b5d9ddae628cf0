"""The kinds kubesched knows, once: each served resource's group, version, plural, kind, scope,
short names, categories and subresources, as upstream's discovery documents list them. The store
(which kinds exist, namespaced or not) and the API server (what it serves) both read this table."""

from __future__ import annotations

from dataclasses import dataclass

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    storage_kind: str = ""  # the Store kind when it differs from ``kind`` (events.k8s.io/v1 events)
    verbs: tuple[str, ...] = ALL_VERBS
    virtual: bool = False  # computed on request, not stored (metrics, reviews): ``virtual.py`` serves it
    custom: bool = False  # a CustomResourceDefinition's: stored under its CRD's name (``is_custom``)
    storage_version: str = ""  # the apiVersion objects are kept in, when another (autoscaling/v1)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def stored_api_version(self) -> str:
        """The apiVersion objects are kept in (events.k8s.io/v1 events are stored as core v1,
        autoscaling/v1 HPAs as autoscaling/v2)."""
        if self.storage_version:
            return self.storage_version
        return "v1" if self.storage_kind and not self.custom else self.group_version

    @property
    def stored(self) -> str:
        return self.storage_kind or self.kind

    @property
    def qualified(self) -> str:
        """``pods``, ``leases.coordination.k8s.io``: how messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def is_custom(kind: str) -> bool:
    """Whether a Store kind is a custom resource's: those are kept under their CRD's name
    (``crontabs.stable.example.com``), which no built-in kind name contains a dot of."""
    return "." in kind


RESOURCES: tuple[Resource, ...] = (
    Resource(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        "pod",
        ("po",),
        ("all",),
        ("status", "binding", "eviction", "log", "resize", "ephemeralcontainers", "exec", "attach", "portforward"),
    ),
    Resource("", "v1", "nodes", "Node", False, "node", ("no",), (), ("status",)),
    # no deletecollection: a namespace goes one at a time (pkg/registry/core/namespace/storage)
    Resource(
        "",
        "v1",
        "namespaces",
        "Namespace",
        False,
        "namespace",
        ("ns",),
        (),
        ("status", "finalize"),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    ),
    Resource("", "v1", "events", "Event", True, "event", ("ev",)),
    # deprecated upstream, still served: the health of the components beside the API server
    Resource(
        "",
        "v1",
        "componentstatuses",
        "ComponentStatus",
        False,
        "componentstatus",
        ("cs",),
        verbs=("get", "list"),
        virtual=True,
    ),
    Resource("", "v1", "services", "Service", True, "service", ("svc",), ("all",), ("status",)),
    Resource(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        True,
        "replicationcontroller",
        ("rc",),
        ("all",),
        ("status", "scale"),
    ),
    Resource("", "v1", "configmaps", "ConfigMap", True, "configmap", ("cm",)),
    Resource("", "v1", "secrets", "Secret", True, "secret"),
    Resource("", "v1", "endpoints", "Endpoints", True, "endpoints", ("ep",)),
    Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True, "endpointslice"),
    Resource("", "v1", "limitranges", "LimitRange", True, "limitrange", ("limits",)),
    Resource("", "v1", "resourcequotas", "ResourceQuota", True, "resourcequota", ("quota",), (), ("status",)),
    Resource("", "v1", "serviceaccounts", "ServiceAccount", True, "serviceaccount", ("sa",), (), ("token",)),
    Resource(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        True,
        "persistentvolumeclaim",
        ("pvc",),
        (),
        ("status",),
    ),
    Resource("", "v1", "persistentvolumes", "PersistentVolume", False, "persistentvolume", ("pv",), (), ("status",)),
    Resource("apps", "v1", "deployments", "Deployment", True, "deployment", ("deploy",), ("all",), ("status", "scale")),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True, "replicaset", ("rs",), ("all",), ("status", "scale")),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True, "statefulset", ("sts",), ("all",), ("status", "scale")),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True, "daemonset", ("ds",), ("all",), ("status",)),
    Resource("apps", "v1", "controllerrevisions", "ControllerRevision", True, "controllerrevision"),
    Resource("batch", "v1", "jobs", "Job", True, "job", (), ("all",), ("status",)),
    Resource("batch", "v1", "cronjobs", "CronJob", True, "cronjob", ("cj",), ("all",), ("status",)),
    Resource(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        True,
        "horizontalpodautoscaler",
        ("hpa",),
        ("all",),
        ("status",),
    ),
    # served from the autoscaling/v2 objects (``api/autoscaling_v1.py``)
    Resource(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        True,
        "horizontalpodautoscaler",
        ("hpa",),
        ("all",),
        ("status",),
        storage_kind="HorizontalPodAutoscaler",
        storage_version="autoscaling/v2",
    ),
    Resource("events.k8s.io", "v1", "events", "Event", True, "event", ("ev",), storage_kind="Event"),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True, "lease"),
    Resource("", "v1", "podtemplates", "PodTemplate", True, "podtemplate"),
    Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, "networkpolicy", ("netpol",)),
    Resource("networking.k8s.io", "v1", "ingresses", "Ingress", True, "ingress", ("ing",), (), ("status",)),
    Resource("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False, "ingressclass"),
    Resource(
        "storage.k8s.io",
        "v1",
        "volumeattributesclasses",
        "VolumeAttributesClass",
        False,
        "volumeattributesclass",
        ("vac",),
    ),
    Resource(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        "customresourcedefinition",
        ("crd", "crds"),
        ("api-extensions",),
        ("status",),
    ),
    Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, "priorityclass", ("pc",)),
    Resource(
        "flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", False, "flowschema", (), (), ("status",)
    ),
    Resource(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        False,
        "prioritylevelconfiguration",
        (),
        (),
        ("status",),
    ),
    Resource("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False, "runtimeclass"),
    Resource(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        "poddisruptionbudget",
        ("pdb",),
        (),
        ("status",),
    ),
    Resource("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False, "deviceclass"),
    Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, "resourceclaim", (), (), ("status",)),
    Resource("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True, "resourceclaimtemplate"),
    Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False, "resourceslice"),
    Resource(
        "resource.k8s.io", "v1", "devicetaintrules", "DeviceTaintRule", False, "devicetaintrule", (), (), ("status",)
    ),
    # workload-aware scheduling (GenericWorkload, beta and off in v1.37): served only with the gate
    # on (apiserver/resources.GATED), as kube-apiserver serves them with it and
    # --runtime-config=scheduling.k8s.io/v1beta1=true
    Resource("scheduling.k8s.io", "v1beta1", "workloads", "Workload", True, "workload"),
    Resource("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", True, "podgroup", (), (), ("status",)),
    Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, "storageclass", ("sc",)),
    Resource("storage.k8s.io", "v1", "csinodes", "CSINode", False, "csinode"),
    Resource("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False, "csidriver"),
    Resource("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True, "csistoragecapacity"),
    Resource(
        "storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, "volumeattachment", (), (), ("status",)
    ),
    Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True, "role"),
    Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, "clusterrole"),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, "rolebinding"),
    Resource(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, "clusterrolebinding"
    ),
    # what delegating authenticators and authorizers ask (kube-scheduler's /metrics)
    Resource(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        False,
        "tokenreview",
        verbs=("create",),
        virtual=True,
    ),
    Resource(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        False,
        "subjectaccessreview",
        verbs=("create",),
        virtual=True,
    ),
    # a namespace admin's question about another user there (SubjectAccessReview in one namespace)
    Resource(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        True,
        "localsubjectaccessreview",
        verbs=("create",),
        virtual=True,
    ),
    # kubectl auth can-i (and --list)
    Resource(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        False,
        "selfsubjectaccessreview",
        verbs=("create",),
        virtual=True,
    ),
    Resource(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        False,
        "selfsubjectrulesreview",
        verbs=("create",),
        virtual=True,
    ),
    # metrics-server's API (kubectl top), from the hollow nodes' requests
    Resource("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", False, "", verbs=("get", "list"), virtual=True),
    Resource("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", True, "", verbs=("get", "list"), virtual=True),
    # kubectl auth whoami
    Resource(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        False,
        "selfsubjectreview",
        verbs=("create",),
        virtual=True,
    ),
)


_BUILTIN: dict[tuple[str, str], Resource] = {(r.group, r.kind): r for r in RESOURCES if not r.virtual}
BUILTIN_KINDS = tuple((g, r.stored) for (g, _), r in _BUILTIN.items())  # (group, Store kind)


def builtin_kind(group: str, kind: str) -> str | None:
    """The Store kind of a built-in group's kind (``events.k8s.io`` Events are stored as core
    ones), or None when no built-in resource of that group has the kind."""
    r = _BUILTIN.get((group, kind))
    return None if r is None else r.stored
