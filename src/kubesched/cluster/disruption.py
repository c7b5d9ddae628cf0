"""PodDisruptionBudgets as the API server sees them: validation, which pods a budget selects, the
status the disruption controller computes (``pkg/controller/disruption``: expectedPods,
currentHealthy, desiredHealthy, disruptionsAllowed, disruptedPods, an eviction's entry dropped once
the pod is gone or after two minutes), and the eviction subresource's budget check
(``pkg/registry/core/pod/storage/eviction.go``). The controller itself is
``controllers/disruption.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.errors import ApiError, TooManyRequests
from kubesched.api.intstr import scaled_value
from kubesched.api.selectors import LabelSelector, parse_label_selector
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.cluster.store import Store
from kubesched.errors import InputError

DELETION_TIMEOUT = 120.0  # seconds an eviction stays in disruptedPods (DeletionTimeout)
MULTIPLE_PDBS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
VIOLATES = "Cannot evict pod as it would violate the pod's disruption budget."


def _selector(pdb: dict[str, Any]) -> LabelSelector | None:
    try:
        return parse_label_selector((pdb.get("spec") or {}).get("selector"), "spec.selector")
    except InputError:
        return None


def selects(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    """policy/v1: a nil selector selects nothing, an empty one every pod of the namespace."""
    pm, bm = pod.get("metadata") or {}, pdb.get("metadata") or {}
    if pm.get("namespace") != bm.get("namespace"):
        return False
    sel = _selector(pdb)
    return sel is not None and sel.matches(pm.get("labels") or {})


def validate_budget(pdb: dict[str, Any]) -> None:
    """The parts of ``ValidatePodDisruptionBudgetSpec`` the controller relies on; raises InputError."""
    spec = pdb.get("spec") or {}
    parse_label_selector(spec.get("selector"), "spec.selector")
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        raise InputError(
            f"Invalid value: {spec['minAvailable']!r}: minAvailable and maxUnavailable cannot be both set",
            field="spec.minAvailable",
        )
    for name in ("minAvailable", "maxUnavailable"):
        value = spec.get(name)
        if value is None:
            continue
        field = f"spec.{name}"
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise InputError(f"Invalid value: {value!r}: must be an integer or percentage (e.g '5%')", field=field)
        if isinstance(value, str):
            if not value.endswith("%") or not value[:-1].isdigit():
                raise InputError(
                    f"Invalid value: {value!r}: a valid percent string must be a numeric string "
                    "followed by an ending '%' (e.g. '1%',  or '93%')",
                    field=field,
                )
            if int(value[:-1]) > 100:
                raise InputError(f"Invalid value: {value!r}: must not be greater than 100%", field=field)
        elif value < 0:
            raise InputError(f"Invalid value: {value}: must be greater than or equal to 0", field=field)


def _healthy(pod: dict[str, Any]) -> bool:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    return not meta.get("deletionTimestamp") and status.get("phase") == "Running"


def budget_status(
    pdb: dict[str, Any],
    pods: list[dict[str, Any]],
    now: float,
    scale: Callable[[dict[str, Any]], int | None] | None = None,
) -> dict[str, Any]:
    """The budget's status over its namespace's ``pods``. ``scale`` gives the replicas of a pod's
    controller (None: it has none): with maxUnavailable or a percentage, expectedPods is the sum
    of the selected pods' controllers' scales (``getExpectedScale``), a bare pod counting one; an
    integer minAvailable counts the selected pods."""
    spec = pdb.get("spec") or {}
    old = (pdb.get("status") or {}).get("disruptedPods") or {}
    selected = [p for p in pods if selects(pdb, p)]
    names = {(p.get("metadata") or {}).get("name") for p in selected}
    disrupted = {name: ts for name, ts in old.items() if name in names and parse_rfc3339(ts) + DELETION_TIMEOUT > now}
    expected = len(selected)
    by_scale = spec.get("maxUnavailable") is not None or isinstance(spec.get("minAvailable"), str)
    if scale is not None and by_scale:
        expected = _expected_scale(selected, scale)
    if spec.get("maxUnavailable") is not None:
        desired = max(expected - scaled_value(spec["maxUnavailable"], expected, round_up=True), 0)
    elif spec.get("minAvailable") is not None:
        desired = scaled_value(spec["minAvailable"], expected, round_up=True)
    else:
        desired = expected  # neither set: no disruption allowed
    healthy = sum(1 for p in selected if _healthy(p) and (p.get("metadata") or {}).get("name") not in disrupted)
    allowed = max(healthy - desired, 0)
    return {
        "observedGeneration": (pdb.get("metadata") or {}).get("generation", 1),
        "disruptedPods": disrupted,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "True" if allowed > 0 else "False",
                "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                "lastTransitionTime": rfc3339(now),
            }
        ],
    }


def _expected_scale(selected: list[dict[str, Any]], scale: Callable[[dict[str, Any]], int | None]) -> int:
    total, seen = 0, set()
    for pod in selected:
        ref = next((r for r in (pod.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")), None)
        if ref is None:
            total += 1
            continue
        if ref.get("uid") in seen:
            continue
        seen.add(ref.get("uid"))
        replicas = scale(pod)
        total += 1 if replicas is None else replicas
    return total


def evict(store: Store, namespace: str, name: str, grace_period_seconds: int | None = None) -> None:
    """pods/eviction: delete the pod unless that breaks its budget (429 TooManyRequests)."""
    pod = store.get("Pod", namespace, name)
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed", "Pending", None) or meta.get("deletionTimestamp"):
        store.delete("Pod", namespace, name, grace_period_seconds)  # no budget applies
        return
    pdbs = [p for p in store.list("PodDisruptionBudget", namespace)[0] if selects(p, pod)]
    if len(pdbs) > 1:
        raise ApiError(MULTIPLE_PDBS)
    if pdbs:
        pdb = pdbs[0]
        st = pdb.get("status") or {}
        if int(st.get("disruptionsAllowed") or 0) <= 0:
            raise TooManyRequests(
                f"{VIOLATES} The disruption budget {pdb['metadata']['name']} needs "
                f"{st.get('desiredHealthy', 0)} healthy pods and has {st.get('currentHealthy', 0)} currently"
            )
        now = rfc3339(store.clock.now())

        def take_one(o: dict[str, Any]) -> dict[str, Any]:
            s = dict(o.get("status") or {})
            s["disruptionsAllowed"] = int(s.get("disruptionsAllowed") or 0) - 1
            s["disruptedPods"] = {**(s.get("disruptedPods") or {}), name: now}
            return {**o, "status": s}

        store.mutate("PodDisruptionBudget", namespace, pdb["metadata"]["name"], take_one)

    def mark(o: dict[str, Any]) -> dict[str, Any]:
        s = dict(o.get("status") or {})
        conds = [c for c in s.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conds.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
                "lastTransitionTime": rfc3339(store.clock.now()),
            }
        )
        return {**o, "status": {**s, "conditions": conds}}

    store.mutate("Pod", namespace, name, mark)
    store.delete("Pod", namespace, name, grace_period_seconds)
