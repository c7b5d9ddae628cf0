"""ResourceQuota: the admission plugin (``apiserver/pkg/admission/plugin/resourcequota``) and the
status the quota controller keeps (``pkg/controller/resourcequota``). A create is charged what it
counts (``api.quota.usage``) against every quota of its namespace whose scopes match it; one that
would take a quota past ``spec.hard`` is refused with upstream's ``exceeded quota`` message, and a
pod that leaves cpu or memory unstated under a quota of them with ``failed quota``. Usage is
summed from the store as it stands, so a refusal never waits for the controller."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubesched.api.errors import Forbidden
from kubesched.api.quantity import canonical, parse_quantity
from kubesched.api.quota import missing_container_resources, pretty, quantity_text, usage
from kubesched.cluster.store import KNOWN_KINDS

# kinds charged against quotas (every namespaced kind counts as count/<resource>)
COUNTED = tuple(k for k, (_, namespaced, _) in KNOWN_KINDS.items() if namespaced and k != "Event")


def resource_of(kind: str) -> tuple[str, str]:
    """(plural, group) of a stored kind."""
    api_version, _, plural = KNOWN_KINDS[kind]
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return plural, group


def object_usage(kind: str, obj: Mapping[str, Any]) -> dict[str, Fraction]:
    plural, group = resource_of(kind)
    return usage(kind, plural, group, obj)


def _qos_best_effort(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = (c or {}).get("resources") or {}
        for part in ("requests", "limits"):
            if any(k in ("cpu", "memory") for k in (res.get(part) or {})):
                return False
    return True


def _scope_selectors(quota: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = quota.get("spec") or {}
    out: list[Mapping[str, Any]] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    out += list(((spec.get("scopeSelector") or {}).get("matchExpressions")) or [])
    return out


def matches(quota: Mapping[str, Any], kind: str, obj: Mapping[str, Any]) -> bool:
    """``Matches``: a quota with scopes covers only pods in them (Terminating: an
    activeDeadlineSeconds; BestEffort: no cpu or memory stated; PriorityClass: the selector's
    operator over the pod's class name)."""
    selectors = _scope_selectors(quota)
    if not selectors:
        return True
    if kind != "Pod":
        return False
    spec = obj.get("spec") or {}
    for sel in selectors:
        scope, op = sel.get("scopeName"), sel.get("operator")
        if scope in ("Terminating", "NotTerminating"):
            deadline = spec.get("activeDeadlineSeconds")
            terminating = isinstance(deadline, int) and deadline >= 0
            if terminating != (scope == "Terminating"):
                return False
        elif scope in ("BestEffort", "NotBestEffort"):
            if _qos_best_effort(obj) != (scope == "BestEffort"):
                return False
        elif scope == "PriorityClass":
            name = spec.get("priorityClassName")
            values = sel.get("values") or []
            ok = {
                "In": bool(name) and name in values,
                "NotIn": not name or name not in values,
                "Exists": bool(name),
                "DoesNotExist": not name,
            }.get(str(op), False)
            if not ok:
                return False
        else:
            return False
    return True


def hard_of(quota: Mapping[str, Any]) -> dict[str, Fraction]:
    return {k: parse_quantity(v) for k, v in ((quota.get("spec") or {}).get("hard") or {}).items()}


def used(quota: Mapping[str, Any], objects: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Fraction]:
    """What the namespace's objects that the quota covers use of its hard resources."""
    hard = hard_of(quota)
    out = dict.fromkeys(hard, Fraction(0))
    for kind, obj in objects:
        if (obj.get("metadata") or {}).get("deletionTimestamp") and kind == "Pod":
            continue
        if not matches(quota, kind, obj):
            continue
        for name, amount in object_usage(kind, obj).items():
            if name in out:
                out[name] += amount
    return out


def status(quota: Mapping[str, Any], objects: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The quota's status as the controller writes it: hard as specified, used summed."""
    hard = dict((quota.get("spec") or {}).get("hard") or {})
    return {
        "hard": {k: canonical(v) for k, v in hard.items()},
        "used": {k: quantity_text(k, v) for k, v in used(quota, objects).items()},
    }


_BY_PLURAL = {".".join(p for p in resource_of(k) if p): k for k in COUNTED}
_LEGACY_KINDS = {
    "pods": "Pod",
    "services": "Service",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "replicationcontrollers": "ReplicationController",
    "resourcequotas": "ResourceQuota",
    "persistentvolumeclaims": "PersistentVolumeClaim",
}


def kinds_for(quotas: Iterable[Mapping[str, Any]]) -> set[str]:
    """The kinds whose objects the quotas' hard resources count."""
    out: set[str] = set()
    for quota in quotas:
        for name in (quota.get("spec") or {}).get("hard") or {}:
            if name.startswith("count/"):
                kind = _BY_PLURAL.get(name.removeprefix("count/"))
                if kind:
                    out.add(kind)
            elif name in _LEGACY_KINDS:
                out.add(_LEGACY_KINDS[name])
            elif name.startswith("services."):
                out.add("Service")
            elif "storage" in name or name.endswith("persistentvolumeclaims"):
                out.add("PersistentVolumeClaim")
            else:
                out.add("Pod")
    return out


# what an update is charged for: a Service's type and ports, a claim's storage, a pod's resize
# (each evaluator's ``Handles``: every other kind is charged on create only)
UPDATE_CHARGED = ("Service", "PersistentVolumeClaim", "Pod")


def check(
    quotas: list[dict[str, Any]],
    kind: str,
    obj: Mapping[str, Any],
    objects: list[tuple[str, dict[str, Any]]],
    old: Mapping[str, Any] | None = None,
) -> None:
    """``checkRequest``, quota by quota in name order: refused with Forbidden when the object
    leaves a quota'd container resource unstated (on create) or would exceed a hard limit. An
    update (``old``: the stored object) is charged what it adds to its old usage."""
    if not quotas:
        return
    delta = object_usage(kind, obj)
    for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
        if not matches(quota, kind, obj):
            continue
        name = quota["metadata"]["name"]
        hard = hard_of(quota)
        if kind == "Pod" and old is None:
            missing = missing_container_resources(obj, hard)
            if missing:
                raise Forbidden(f"failed quota: {name}: {missing}")
        charged = delta
        if old is not None and matches(quota, kind, old):
            before = object_usage(kind, old)
            charged = {k: v - before.get(k, Fraction(0)) for k, v in delta.items()}
        requested = {k: v for k, v in charged.items() if k in hard and v > 0}
        if not requested:
            continue
        current = used(quota, objects)
        exceeded = sorted(k for k, v in requested.items() if current[k] + v > hard[k])
        if exceeded:
            raw_hard = (quota.get("spec") or {}).get("hard") or {}
            raise Forbidden(
                f"exceeded quota: {name}, requested: {pretty({k: requested[k] for k in exceeded})}, "
                f"used: {pretty({k: current[k] for k in exceeded})}, "
                f"limited: {','.join(f'{k}={canonical(raw_hard[k])}' for k in exceeded)}"
            )
