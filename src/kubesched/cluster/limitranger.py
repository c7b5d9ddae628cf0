"""The LimitRanger admission plugin (``plugin/pkg/admission/limitranger``): a new pod's containers
get their namespace's LimitRange defaults where they state no request or limit (noted in the
``kubernetes.io/limit-ranger`` annotation), then every Container and Pod item's min, max and
limit-to-request ratio is enforced, and a claim's storage against PersistentVolumeClaim items. A
refusal is a Forbidden naming each broken constraint, as upstream's aggregate lists them."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kubesched.api.errors import Forbidden
from kubesched.api.quantity import canonical, parse_quantity
from kubesched.api.quota import pod_resources

ANNOTATION = "kubernetes.io/limit-ranger"


def _list(raw: Any) -> dict[str, Any]:
    return dict(raw) if isinstance(raw, Mapping) else {}


def _container_defaults(ranges: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``defaultContainerResourceRequirements``: the Container items' default requests and limits
    (a later LimitRange's value for a resource wins, as upstream's map writes do)."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            if (item or {}).get("type") == "Container":
                requests.update(_list(item.get("defaultRequest")))
                limits.update(_list(item.get("default")))
    return requests, limits


def _merge(
    container: dict[str, Any], requests: dict[str, Any], limits: dict[str, Any], what: str
) -> tuple[dict[str, Any], list[str]]:
    """``mergeContainerResources``: unset limits and requests filled; the notes it makes."""
    res = dict(container.get("resources") or {})
    own_limits, own_requests = _list(res.get("limits")), _list(res.get("requests"))
    set_limits = sorted(k for k in limits if k not in own_limits)
    set_requests = sorted(k for k in requests if k not in own_requests)
    notes = []
    if set_requests:
        notes.append(f"{', '.join(set_requests)} request for {what} {container.get('name', '')}")
    if set_limits:
        notes.append(f"{', '.join(set_limits)} limit for {what} {container.get('name', '')}")
    if not notes:
        return container, notes
    res["limits"] = {**own_limits, **{k: limits[k] for k in set_limits}}
    res["requests"] = {**own_requests, **{k: requests[k] for k in set_requests}}
    return {**container, "resources": res}, notes


def default_pod(pod: dict[str, Any], ranges: list[dict[str, Any]]) -> dict[str, Any]:
    """``PodMutateLimitFunc`` over every LimitRange: the defaults and the annotation."""
    requests, limits = _container_defaults(ranges)
    if not requests and not limits:
        return pod
    spec = dict(pod.get("spec") or {})
    notes: list[str] = []
    for key, what in (("containers", "container"), ("initContainers", "init container")):
        merged = []
        for c in spec.get(key) or []:
            c, made = _merge(dict(c or {}), requests, limits, what)
            merged.append(c)
            notes += made
        if key in spec:
            spec[key] = merged
    if not notes:
        return pod
    meta = dict(pod.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION: "LimitRanger plugin set: " + "; ".join(notes)}
    return {**pod, "metadata": meta, "spec": spec}


def _values(raw: Mapping[str, Any]) -> dict[str, Fraction]:
    return {k: parse_quantity(v) for k, v in raw.items()}


def _shown(amounts: Mapping[str, Any], key: str) -> str:
    return canonical(amounts[key])


def _check(kind: str, item: Mapping[str, Any], requests: Mapping[str, Any], limits: Mapping[str, Any]) -> list[str]:
    """``minConstraint``, ``maxConstraint`` and ``limitRequestRatioConstraint`` for one item."""
    errors = []
    req, lim = _values(requests), _values(limits)
    for key, bound in sorted(_list(item.get("min")).items()):
        enforced, text = parse_quantity(bound), canonical(bound)
        if key not in req:
            errors.append(f"minimum {key} usage per {kind} is {text}.  No request is specified")
        elif req[key] < enforced:
            errors.append(f"minimum {key} usage per {kind} is {text}, but request is {_shown(requests, key)}")
        elif key in lim and lim[key] < enforced:
            errors.append(f"minimum {key} usage per {kind} is {text}, but limit is {_shown(limits, key)}")
    for key, bound in sorted(_list(item.get("max")).items()):
        enforced, text = parse_quantity(bound), canonical(bound)
        if kind == "PersistentVolumeClaim":  # maxRequestConstraint: claims state requests only
            if key not in req:
                errors.append(f"maximum {key} usage per {kind} is {text}.  No request is specified")
            elif req[key] > enforced:
                errors.append(f"maximum {key} usage per {kind} is {text}, but request is {_shown(requests, key)}")
            continue
        if key not in lim:
            errors.append(f"maximum {key} usage per {kind} is {text}.  No limit is specified")
        elif lim[key] > enforced:
            errors.append(f"maximum {key} usage per {kind} is {text}, but limit is {_shown(limits, key)}")
        elif key in req and req[key] > enforced:
            errors.append(f"maximum {key} usage per {kind} is {text}, but request is {_shown(requests, key)}")
    for key, bound in sorted(_list(item.get("maxLimitRequestRatio")).items()):
        head = f"{key} max limit to request ratio per {kind} is {canonical(bound)}, but"
        if not req.get(key):
            errors.append(f"{head} no request is specified or request is 0")
        elif not lim.get(key):
            errors.append(f"{head} no limit is specified or limit is 0")
        elif lim[key] / req[key] > parse_quantity(bound):
            errors.append(f"{head} provided ratio is {float(lim[key] / req[key]):f}")
    return errors


def _fraction_text(amounts: Mapping[str, Fraction]) -> dict[str, str]:
    return {k: canonical(f"{v.numerator}" if v.denominator == 1 else f"{round(v * 1000)}m") for k, v in amounts.items()}


def pod_errors(pod: Mapping[str, Any], ranges: list[dict[str, Any]]) -> list[str]:
    """``PodValidateLimitFunc`` over every LimitRange."""
    spec = pod.get("spec") or {}
    errors: list[str] = []
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            kind = (item or {}).get("type")
            if kind == "Container":
                for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
                    res = (c or {}).get("resources") or {}
                    errors += _check("Container", item, _list(res.get("requests")), _list(res.get("limits")))
            elif kind == "Pod":
                requests = _fraction_text(pod_resources(spec, "requests", overhead=False))
                limits = _fraction_text(pod_resources(spec, "limits", overhead=False))
                errors += _check("Pod", item, requests, limits)
    return errors


def claim_errors(claim: Mapping[str, Any], ranges: list[dict[str, Any]]) -> list[str]:
    """``PersistentVolumeClaimValidateLimitFunc``: storage requests within the claim items."""
    requests = _list(((claim.get("spec") or {}).get("resources") or {}).get("requests"))
    errors: list[str] = []
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            if (item or {}).get("type") == "PersistentVolumeClaim":
                errors += _check("PersistentVolumeClaim", item, requests, {})
    return errors


def admit(kind: str, obj: dict[str, Any], ranges: list[dict[str, Any]]) -> dict[str, Any]:
    """LimitRanger on a create: a pod defaulted then validated, a claim validated."""
    if not ranges:
        return obj
    if kind == "Pod":
        obj = default_pod(obj, ranges)
        errors = pod_errors(obj, ranges)
    elif kind == "PersistentVolumeClaim":
        errors = claim_errors(obj, ranges)
    else:
        return obj
    if errors:
        raise Forbidden(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return obj
