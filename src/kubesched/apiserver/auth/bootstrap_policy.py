"""kube-apiserver's bootstrap RBAC policy (``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``), as
kube-apiserver v1.37.2 serves it: every ClusterRole, ClusterRoleBinding, Role and RoleBinding its
RBAC post-start hook reconciles (``bootstrap_policy.json``, read from upstream's kube-apiserver by
``scripts/gen_bootstrap_policy.py``): cluster-admin, the aggregated admin/edit/view roles and their
parts, discovery, the roles of the control plane's components and controllers (a scheduler runs
under ``system:kube-scheduler`` and ``system:volume-scheduler``) and their bindings. Created at
start when missing, as the post-start hook creates them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
_KINDS = (
    ("clusterRoles", "ClusterRole", "rbac.authorization.k8s.io/v1"),
    ("clusterRoleBindings", "ClusterRoleBinding", "rbac.authorization.k8s.io/v1"),
    ("roles", "Role", "rbac.authorization.k8s.io/v1"),
    ("roleBindings", "RoleBinding", "rbac.authorization.k8s.io/v1"),
)


def rule(
    verbs: tuple[str, ...], groups: tuple[str, ...], resources: tuple[str, ...], names: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A PolicyRule over resources."""
    out: dict[str, Any] = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        out["resourceNames"] = list(names)
    return out


def urls(verbs: tuple[str, ...], paths: tuple[str, ...]) -> dict[str, Any]:
    """A PolicyRule over non-resource URLs."""
    return {"verbs": list(verbs), "nonResourceURLs": list(paths)}


@cache
def _policy() -> dict[str, list[dict[str, Any]]]:
    raw: dict[str, list[dict[str, Any]]] = json.loads(Path(__file__).with_name("bootstrap_policy.json").read_text())
    return raw


def objects() -> list[tuple[str, dict[str, Any]]]:
    """(kind, object) for every object of the policy, fresh copies, roles before their bindings."""
    policy = _policy()
    out = []
    for key, kind, api_version in _KINDS:
        for obj in policy[key]:
            out.append((kind, {"apiVersion": api_version, "kind": kind, **json.loads(json.dumps(obj))}))
    return out


def cluster_role_rules(name: str) -> list[dict[str, Any]]:
    """The rules of one bootstrap ClusterRole."""
    role = next(o for o in _policy()["clusterRoles"] if o["metadata"]["name"] == name)
    return list(role.get("rules") or [])


KUBE_SCHEDULER = cluster_role_rules("system:kube-scheduler")
VOLUME_SCHEDULER = cluster_role_rules("system:volume-scheduler")


def install(store: Any) -> None:
    """Create the bootstrap roles and bindings that are missing (existing ones are the user's)."""
    for kind, obj in objects():
        meta = obj["metadata"]
        if store.try_get(kind, meta.get("namespace", ""), meta["name"]) is None:
            store.create(kind, obj)
