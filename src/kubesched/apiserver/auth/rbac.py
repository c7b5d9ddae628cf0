"""RBAC authorization (``plugin/pkg/auth/authorizer/rbac``): a request's attributes (who, verb,
API group, resource and subresource, namespace, name, or a non-resource path) are allowed when a
ClusterRoleBinding, or a RoleBinding of the request's namespace, binds a subject the user matches
to a role with a rule that covers them. ``system:masters`` is always allowed, as kube-apiserver's
privileged-group authorizer allows it. Denials are worded as kube-apiserver's 403 Status."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

PRIVILEGED_GROUP = "system:masters"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """``user.Info``: who a request is from."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Attributes:
    """``authorizer.Attributes`` of one request (``endpoints/request/requestinfo.go``)."""

    user: UserInfo
    verb: str
    resource_request: bool
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


class Objects(Protocol):
    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]: ...

    def try_get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...


def _has(values: Iterable[str], want: str) -> bool:
    return any(v == "*" or v == want for v in values)


def _resource_matches(rule_resources: Iterable[str], resource: str, subresource: str) -> bool:
    """``ResourceMatches`` (``pkg/apis/rbac/v1/evaluation_helpers.go``): ``*``, ``res``,
    ``res/sub`` and ``*/sub``; ``res/*`` is no wildcard there, so it names no subresource."""
    combined = f"{resource}/{subresource}" if subresource else resource
    for r in rule_resources:
        if r == "*" or r == combined:
            return True
        if subresource and r == f"*/{subresource}":
            return True
    return False


def _url_matches(rule_urls: Iterable[str], path: str) -> bool:
    for u in rule_urls:
        if u == "*" or u == path:
            return True
        if u.endswith("*") and path.startswith(u[:-1]):
            return True
    return False


def rule_allows(rule: Mapping[str, Any], a: Attributes) -> bool:
    """``RuleAllows``."""
    if not _has(rule.get("verbs") or [], a.verb):
        return False
    if not a.resource_request:
        return _url_matches(rule.get("nonResourceURLs") or [], a.path)
    if not _has(rule.get("apiGroups") or [], a.api_group):
        return False
    if not _resource_matches(rule.get("resources") or [], a.resource, a.subresource):
        return False
    names = rule.get("resourceNames") or []
    return not names or a.name in names


def user_subject_matches(subject: Mapping[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    """``appliesToUser``: a User by name, a Group the user is in, a ServiceAccount by its user
    name (its namespace defaulting to the binding's)."""
    kind = subject.get("kind")
    name = str(subject.get("name") or "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = str(subject.get("namespace") or binding_namespace)
        return user.name == f"system:serviceaccount:{ns}:{name}"
    return False


class Authorizer:
    """RBAC over the Store's Roles, ClusterRoles and their bindings."""

    def __init__(self, objects: Objects) -> None:
        self.objects = objects

    def _role_rules(self, ref: Mapping[str, Any], namespace: str) -> list[dict[str, Any]]:
        kind = ref.get("kind")
        name = str(ref.get("name") or "")
        role = (
            self.objects.try_get("ClusterRole", "", name)
            if kind == "ClusterRole"
            else self.objects.try_get("Role", namespace, name)
        )
        return list((role or {}).get("rules") or [])

    def rules_for(self, user: UserInfo, namespace: str) -> list[dict[str, Any]]:
        """Every rule the user holds cluster-wide and in ``namespace`` (``RulesFor``)."""
        rules: list[dict[str, Any]] = []
        for crb in self.objects.list("ClusterRoleBinding")[0]:
            if any(user_subject_matches(s, user, "") for s in crb.get("subjects") or []):
                rules += self._role_rules(crb.get("roleRef") or {}, "")
        if namespace:
            for rb in self.objects.list("RoleBinding", namespace)[0]:
                if any(user_subject_matches(s, user, namespace) for s in rb.get("subjects") or []):
                    rules += self._role_rules(rb.get("roleRef") or {}, namespace)
        return rules

    def allowed(self, a: Attributes) -> bool:
        if PRIVILEGED_GROUP in a.user.groups:
            return True
        return any(rule_allows(r, a) for r in self.rules_for(a.user, a.namespace))


def forbidden_message(a: Attributes, qualified_resource: str) -> str:
    """kube-apiserver's 403 (``responsewriters.forbiddenMessage``)."""
    who = f'User "{a.user.name}"'
    if not a.resource_request:
        return f'forbidden: {who} cannot {a.verb} path "{a.path}"'
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    scope = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    subject = f'{qualified_resource} "{a.name}"' if a.name else qualified_resource
    return f'{subject} is forbidden: {who} cannot {a.verb} resource "{resource}" in API group "{a.api_group}" {scope}'
