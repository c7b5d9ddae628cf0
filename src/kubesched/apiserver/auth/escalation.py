"""RBAC escalation prevention (``pkg/registry/rbac``: the policy-based role and binding storages and
``validation.ConfirmNoEscalation``): a user may create or update a Role or ClusterRole only with
rules they already hold, unless they may ``escalate`` it, and bind a role only when they hold
its rules, unless they may ``bind`` it; ``system:masters`` may do both. A refusal is kube-apiserver's
403, listing each missing rule broken down to one verb on one resource."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.errors import Forbidden, NotFound
from kubesched.apiserver.auth.rbac import PRIVILEGED_GROUP, Attributes, Authorizer, UserInfo

RBAC_GROUP = "rbac.authorization.k8s.io"
ROLE_KINDS = {"Role": "roles", "ClusterRole": "clusterroles"}
BINDING_KINDS = {"RoleBinding": "rolebindings", "ClusterRoleBinding": "clusterrolebindings"}


def breakdown(rule: Mapping[str, Any]) -> list[dict[str, list[str]]]:
    """``BreakdownRule``: one rule per API group, resource, verb (and resource name), and per
    non-resource URL and verb."""
    out: list[dict[str, list[str]]] = []
    verbs = list(rule.get("verbs") or [])
    names = list(rule.get("resourceNames") or [])
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            for verb in verbs:
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                out += [{**base, "resourceNames": [n]} for n in names] if names else [base]
    for url in rule.get("nonResourceURLs") or []:
        out += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs]
    return out


def _has(values: Iterable[str], want: str) -> bool:
    return any(v == "*" or v == want for v in values)


def _resource_covers(owner: Iterable[str], want: str) -> bool:
    """``resourceCoversAll``: ``*``, the same, or ``res/*`` / ``*/sub`` over a subresource."""
    for r in owner:
        if r in ("*", want):
            return True
        if "/" in want:
            res, sub = want.split("/", 1)
            if r in (f"{res}/*", f"*/{sub}"):
                return True
    return False


def _url_covers(owner: Iterable[str], want: str) -> bool:
    return any(u == "*" or u == want or (u.endswith("*") and want.startswith(u[:-1])) for u in owner)


def rule_covers(owner: Mapping[str, Any], sub: Mapping[str, list[str]]) -> bool:
    """``ruleCovers`` for one broken-down rule."""
    if not _has(owner.get("verbs") or [], sub["verbs"][0]):
        return False
    if sub.get("nonResourceURLs"):
        return _url_covers(owner.get("nonResourceURLs") or [], sub["nonResourceURLs"][0])
    if not _has(owner.get("apiGroups") or [], sub["apiGroups"][0]):
        return False
    if not _resource_covers(owner.get("resources") or [], sub["resources"][0]):
        return False
    names = owner.get("resourceNames") or []
    return not names or (bool(sub.get("resourceNames")) and sub["resourceNames"][0] in names)


def missing_rules(owner: list[dict[str, Any]], wanted: Iterable[Mapping[str, Any]]) -> list[dict[str, list[str]]]:
    """``Covers``: the broken-down rules of ``wanted`` that no rule of ``owner`` covers."""
    return [sub for rule in wanted for sub in breakdown(rule) if not any(rule_covers(o, sub) for o in owner)]


def _go_strings(values: list[str]) -> str:
    """Go's ``%q`` of a ``[]string``."""
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


def compact_string(rule: Mapping[str, list[str]]) -> str:
    """``rbacv1helpers.CompactString``."""
    parts = [
        f"{label}:{_go_strings(rule[key])}"
        for key, label in (
            ("apiGroups", "APIGroups"),
            ("resources", "Resources"),
            ("nonResourceURLs", "NonResourceURLs"),
            ("resourceNames", "ResourceNames"),
            ("verbs", "Verbs"),
        )
        if rule.get(key)
    ]
    return "{" + ", ".join(parts) + "}"


class EscalationCheck:
    """Run on every create and update of a role or binding, with the requesting user."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def check(self, user: UserInfo, kind: str, obj: Mapping[str, Any]) -> None:
        if PRIVILEGED_GROUP in user.groups or (kind not in ROLE_KINDS and kind not in BINDING_KINDS):
            return
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "") if kind in ("Role", "RoleBinding") else ""
        if kind in ROLE_KINDS:
            plural = ROLE_KINDS[kind]
            if self._may(user, "escalate", plural, namespace, name):
                return
            if kind == "ClusterRole" and obj.get("aggregationRule") is not None:
                raise self._forbidden(plural, name, "must have cluster-admin privileges to use the aggregationRule")
            self._confirm(user, plural, name, namespace, list(obj.get("rules") or []))
            return
        plural = BINDING_KINDS[kind]
        ref = obj.get("roleRef") or {}
        ref_kind, ref_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        ref_plural = ROLE_KINDS.get(ref_kind, "")
        if ref_plural and self._may(user, "bind", ref_plural, namespace, ref_name):
            return
        role = self.authorizer.objects.try_get(ref_kind, namespace if ref_kind == "Role" else "", ref_name)
        if role is None:  # GetRoleReferenceRules: the role must exist to be checked
            raise NotFound(
                f'{ref_plural}.{RBAC_GROUP} "{ref_name}" not found',
                details={"name": ref_name, "group": RBAC_GROUP, "kind": ref_plural},
            )
        self._confirm(user, plural, name, namespace, list(role.get("rules") or []))

    def _may(self, user: UserInfo, verb: str, plural: str, namespace: str, name: str) -> bool:
        """``RoleEscalationAuthorized`` / ``BindingAuthorized``: the verb on that role."""
        attrs = Attributes(
            user, verb, True, api_group=RBAC_GROUP, resource=plural, namespace=namespace, name=name, api_version="v1"
        )
        return self.authorizer.allowed(attrs)

    def _confirm(self, user: UserInfo, plural: str, name: str, namespace: str, rules: list[dict[str, Any]]) -> None:
        """``ConfirmNoEscalation``: every rule is one the user holds in ``namespace`` (or cluster-wide)."""
        missing = missing_rules(self.authorizer.rules_for(user, namespace), rules)
        if not missing:
            return
        lines = sorted({compact_string(r) for r in missing})
        groups = _go_strings(list(user.groups))
        why = (
            f'user "{user.name}" (groups={groups}) is attempting to grant RBAC permissions not currently held:\n'
            + "\n".join(lines)
        )
        raise self._forbidden(plural, name, why)

    @staticmethod
    def _forbidden(plural: str, name: str, why: str) -> Forbidden:
        return Forbidden(
            f'{plural}.{RBAC_GROUP} "{name}" is forbidden: {why}',
            details={"name": name, "group": RBAC_GROUP, "kind": plural},
        )
