"""Reading and writing ResourceClaims for DynamicResources: a pod's claim entries, a claim's
allocation, results, binding conditions and consumers, the finalizer, and the score of a
firstAvailable allocation (``dynamicresources.go``, ``k8s.io/dynamic-resource-allocation``)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kubesched.api.errors import Conflict
from kubesched.api.pod import PodInfo
from kubesched.scheduler.plugins.dynamicresources.devices import DeviceTable
from kubesched.scheduler.plugins.dynamicresources.extended import (
    CLAIM_ANNOTATION,
)


class ClaimMissing(Exception):
    pass


def extended_names(pod: PodInfo) -> bool:
    """Whether the pod requests any resource of a domain-prefixed name (an extended resource)."""
    return any("/" in r for r in pod.requests)


def resource_claims(pod: PodInfo) -> list[Any]:
    spec = pod.obj.get("spec") or {}
    claims = spec.get("resourceClaims")
    return claims if isinstance(claims, list) else []


FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
CONFLICT_RETRIES = 5  # retry.DefaultRetry's steps


BINDING_TIMEOUT = 600.0  # DynamicResourcesBindingTimeoutDefault
BINDING_POLL_SECONDS = 5.0


def allocation_of(claim: Mapping[str, Any]) -> Mapping[str, Any]:
    return (claim.get("status") or {}).get("allocation") or {}


def results_of(allocation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((allocation.get("devices") or {}).get("results") or [])


def device_conditions(claim: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Mapping[str, Any]] | None:
    """``getAllocatedDeviceStatus``: the conditions of the result's device in the claim's status."""
    key = (result.get("driver"), result.get("pool"), result.get("device"))
    for d in (claim.get("status") or {}).get("devices") or []:
        if (d.get("driver"), d.get("pool"), d.get("device")) == key:
            return {str(c.get("type")): c for c in d.get("conditions") or [] if isinstance(c, Mapping)}
    return None


def binding_ready(claim: Mapping[str, Any]) -> bool:
    """``isClaimReadyForBinding``: every binding condition of every allocated device True."""
    if not allocation_of(claim):
        return False
    for r in results_of(allocation_of(claim)):
        if not r.get("bindingConditions"):
            continue
        conditions = device_conditions(claim, r)
        if conditions is None:
            return False
        if not all((conditions.get(c) or {}).get("status") == "True" for c in r["bindingConditions"]):
            return False
    return True


def binding_failure(claim: Mapping[str, Any]) -> str | None:
    """A binding failure condition that is True, as upstream's error names it; None if none is."""
    for r in results_of(allocation_of(claim)):
        if not r.get("bindingConditions"):
            continue
        conditions = device_conditions(claim, r) or {}
        for name in r.get("bindingFailureConditions") or []:
            c = conditions.get(name)
            if c is not None and c.get("status") == "True":
                meta = claim.get("metadata") or {}
                return f'claim={meta.get("name")}, reason={c.get("reason", "")}, message="{c.get("message", "")}"'
    return None


def with_finalizer(client: Any, claim: Mapping[str, Any]) -> dict[str, Any]:
    """``bindClaim``: a claim the scheduler allocates gets the delete-protection finalizer (an
    Update) before its status is written; the resourceclaim controller removes it once the claim
    is deallocated."""
    meta = claim.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or [])
    if FINALIZER in finalizers:
        return dict(claim)
    return dict(client.update_claim({**claim, "metadata": {**meta, "finalizers": [*finalizers, FINALIZER]}}))


def delete_claim(client: Any, claim: Mapping[str, Any]) -> None:
    """``deleteClaim``: the finalizer removed first (retried on conflict with the latest
    version), then the delete."""
    meta = claim.get("metadata") or {}
    ns, name = str(meta.get("namespace")), str(meta.get("name"))
    current: Mapping[str, Any] = claim
    for attempt in range(CONFLICT_RETRIES):
        finalizers = list((current.get("metadata") or {}).get("finalizers") or [])
        if FINALIZER not in finalizers:
            break
        finalizers.remove(FINALIZER)
        try:
            client.update_claim({**current, "metadata": {**current["metadata"], "finalizers": finalizers}})
            break
        except Conflict:
            if attempt == CONFLICT_RETRIES - 1:
                raise
            current = client.get("ResourceClaim", ns, name)
    client.delete_claim(ns, name)


def add_shares(
    out: dict[int, dict[str, Fraction]],
    source: Mapping[tuple[str, str, str], Mapping[str, Fraction]],
    table: DeviceTable,
) -> None:
    """Add what ``source`` consumes of each shared device to ``out``, by device row."""
    for key, amounts in source.items():
        i = table.index.get(key)
        if i is None:
            continue
        mine = out.setdefault(i, {})
        for name, amount in amounts.items():
            mine[name] = mine.get(name, Fraction(0)) + amount


def special_owner(claim: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The controller reference of an extended-resource claim (annotated), or None (malformed
    metadata included: this runs in the claim informer's handler)."""
    meta = claim.get("metadata") if claim is not None else None
    if not isinstance(meta, Mapping):
        return None
    annotations = meta.get("annotations")
    if not isinstance(annotations, Mapping) or annotations.get(CLAIM_ANNOTATION) != "true":
        return None
    refs = meta.get("ownerReferences")
    for r in refs if isinstance(refs, list) else ():
        if isinstance(r, Mapping) and r.get("controller") and r.get("uid"):
            return r
    return None


def uid_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def reserved_for(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((claim.get("status") or {}).get("reservedFor") or [])


def request_with_class(claim: Mapping[str, Any], class_name: str) -> str:
    for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if (r.get("exactly") or {}).get("deviceClassName") == class_name:
            return str(r.get("name"))
        for sub in r.get("firstAvailable") or []:
            if sub.get("deviceClassName") == class_name:
                return f"{r.get('name')}/{sub.get('name')}"
    return "?"


FIRST_AVAILABLE_MAX = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


def first_available(claim: Mapping[str, Any]) -> bool:
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
    return any(isinstance(r, Mapping) and r.get("firstAvailable") for r in requests)


def rank_score(claim: Mapping[str, Any], allocation: Mapping[str, Any]) -> int:
    """A claim's part of the score: 8 − i for each firstAvailable request its allocation
    satisfies with the i-th subrequest."""
    chosen = {
        str(r.get("request"))
        for r in (allocation.get("devices") or {}).get("results") or ()
        if "/" in str(r.get("request"))
    }
    score = 0
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        for i, sub in enumerate(req.get("firstAvailable") or ()):
            if f"{req.get('name')}/{sub.get('name')}" in chosen:
                score += FIRST_AVAILABLE_MAX - i
    return score
