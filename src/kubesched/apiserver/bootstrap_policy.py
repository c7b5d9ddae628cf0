"""kube-apiserver's bootstrap RBAC policy (``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``)
for what the embedded server serves: cluster-admin, the aggregated admin/edit/view roles and
their ``system:aggregate-to-*`` parts, the discovery and self-review roles every authenticated
user has, and the two roles a scheduler runs under, ``system:kube-scheduler`` and
``system:volume-scheduler``, with their default bindings. Created at start when missing, as the
API server's RBAC post-start hook reconciles them."""

from __future__ import annotations

from typing import Any

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def rule(
    verbs: tuple[str, ...], groups: tuple[str, ...], resources: tuple[str, ...], names: tuple[str, ...] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    return out


def urls(verbs: tuple[str, ...], paths: tuple[str, ...]) -> dict[str, Any]:
    return {"verbs": list(verbs), "nonResourceURLs": list(paths)}


def _role(
    name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None, aggregate: str = ""
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {**BOOTSTRAP_LABEL, **(labels or {})}, "annotations": dict(AUTOUPDATE)},
        "rules": rules,
    }
    if aggregate:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{aggregate}": "true"}}]
        }
        role["rules"] = []
    return role


def _binding(name: str, role: str, subjects: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": dict(BOOTSTRAP_LABEL), "annotations": dict(AUTOUPDATE)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }


def _group(name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}


def _user(name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


EVENTS = rule(("create", "patch", "update"), ("", "events.k8s.io"), ("events",))

KUBE_SCHEDULER = [
    EVENTS,
    # leader election (its own Lease)
    rule(("create",), ("coordination.k8s.io",), ("leases",)),
    rule(("get", "update"), ("coordination.k8s.io",), ("leases",), ("kube-scheduler",)),
    # what it schedules and binds
    rule(READ, ("",), ("nodes",)),
    rule(("delete", "get", "list", "watch"), ("",), ("pods",)),
    rule(("create",), ("",), ("bindings", "pods/binding")),
    rule(("patch", "update"), ("",), ("pods/status",)),
    # what selects pods (default spreading)
    rule(READ, ("",), ("replicationcontrollers", "services")),
    rule(READ, ("apps", "extensions"), ("replicasets",)),
    rule(READ, ("apps",), ("statefulsets",)),
    rule(READ, ("policy",), ("poddisruptionbudgets",)),
    rule(READ, ("",), ("persistentvolumeclaims", "persistentvolumes")),
    rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
    rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
    rule(READ, ("storage.k8s.io",), ("csinodes",)),
    rule(READ, ("",), ("namespaces",)),
    rule(READ, ("storage.k8s.io",), ("csidrivers",)),
    rule(READ, ("storage.k8s.io",), ("csistoragecapacities",)),
    rule(READ, ("storage.k8s.io",), ("volumeattachments",)),
    # dynamic resource allocation (GA since v1.34)
    rule(READ, ("resource.k8s.io",), ("resourceclaims", "deviceclasses", "resourceslices")),
    rule(("create", "delete"), ("resource.k8s.io",), ("resourceclaims",)),
    rule(("get", "patch", "update"), ("resource.k8s.io",), ("resourceclaims/status",)),
    rule(("patch", "update"), ("resource.k8s.io",), ("resourceclaims/binding",)),
]

VOLUME_SCHEDULER = [
    rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumes",)),
    rule(READ, ("storage.k8s.io",), ("storageclasses",)),
    rule(("get", "list", "patch", "update", "watch"), ("",), ("persistentvolumeclaims",)),
]

AGGREGATE_TO_VIEW = [
    rule(
        READ,
        ("",),
        (
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
        ),
    ),
    rule(
        READ,
        ("",),
        (
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ),
    ),
    rule(READ, ("",), ("namespaces",)),
    rule(
        READ,
        ("apps",),
        (
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ),
    ),
    rule(READ, ("batch",), ("cronjobs", "cronjobs/status", "jobs", "jobs/status")),
    rule(READ, ("policy",), ("poddisruptionbudgets", "poddisruptionbudgets/status")),
    rule(READ, ("events.k8s.io",), ("events",)),
]

AGGREGATE_TO_EDIT = [
    rule(READ, ("",), ("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy")),
    rule(("impersonate",), ("",), ("serviceaccounts",)),
    rule(WRITE, ("",), ("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy")),
    rule(("create",), ("",), ("pods/eviction",)),
    rule(
        WRITE,
        ("",),
        (
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ),
    ),
    rule(("create",), ("",), ("serviceaccounts/token",)),
    rule(
        WRITE,
        ("apps",),
        (
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ),
    ),
    rule(WRITE, ("batch",), ("cronjobs", "jobs")),
    rule(WRITE, ("policy",), ("poddisruptionbudgets",)),
    rule(
        ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
        ("coordination.k8s.io",),
        ("leases",),
    ),
]

AGGREGATE_TO_ADMIN = [
    rule(("create",), ("authorization.k8s.io",), ("localsubjectaccessreviews",)),
    rule(
        ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
        ("rbac.authorization.k8s.io",),
        ("rolebindings", "roles"),
    ),
]

DISCOVERY = [
    urls(
        ("get",),
        (
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
            "/healthz",
            "/livez",
            "/openapi",
            "/openapi/*",
            "/readyz",
            "/version",
            "/version/",
        ),
    )
]
BASIC_USER = [
    rule(("create",), ("authorization.k8s.io",), ("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
    rule(("create",), ("authentication.k8s.io",), ("selfsubjectreviews",)),
]
PUBLIC_INFO = [urls(("get",), ("/healthz", "/livez", "/readyz", "/version", "/version/"))]
MONITORING = [
    urls(
        ("get",), ("/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*")
    )
]


def cluster_roles() -> list[dict[str, Any]]:
    return [
        _role("cluster-admin", [rule(("*",), ("*",), ("*",)), urls(("*",), ("*",))]),
        _role("admin", [], aggregate="admin"),
        _role("edit", [], {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}, aggregate="edit"),
        _role("view", [], {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}, aggregate="view"),
        _role(
            "system:aggregate-to-admin", AGGREGATE_TO_ADMIN, {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}
        ),
        _role("system:aggregate-to-edit", AGGREGATE_TO_EDIT, {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
        _role("system:aggregate-to-view", AGGREGATE_TO_VIEW, {"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
        _role("system:discovery", DISCOVERY),
        _role("system:basic-user", BASIC_USER),
        _role("system:public-info-viewer", PUBLIC_INFO),
        _role("system:monitoring", MONITORING),
        _role("system:kube-scheduler", KUBE_SCHEDULER),
        _role("system:volume-scheduler", VOLUME_SCHEDULER),
    ]


def cluster_role_bindings() -> list[dict[str, Any]]:
    return [
        _binding("cluster-admin", "cluster-admin", [_group("system:masters")]),
        _binding("system:discovery", "system:discovery", [_group("system:authenticated")]),
        _binding("system:basic-user", "system:basic-user", [_group("system:authenticated")]),
        _binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            [_group("system:authenticated"), _group("system:unauthenticated")],
        ),
        _binding("system:monitoring", "system:monitoring", [_group("system:monitoring")]),
        _binding("system:kube-scheduler", "system:kube-scheduler", [_user("system:kube-scheduler")]),
        _binding("system:volume-scheduler", "system:volume-scheduler", [_user("system:kube-scheduler")]),
    ]


def install(store: Any) -> None:
    """Create the bootstrap roles and bindings that are missing (existing ones are the user's)."""
    for kind, objs in (("ClusterRole", cluster_roles()), ("ClusterRoleBinding", cluster_role_bindings())):
        for obj in objs:
            if store.try_get(kind, "", obj["metadata"]["name"]) is None:
                store.create(kind, obj)
