"""Validation of the workload kinds (``pkg/apis/apps/validation``, ``pkg/apis/batch/validation``):
Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs are checked after their defaults, as
kube-apiserver checks them, so no controller is ever handed a spec it cannot act on. Each check
raises the first InputError in upstream's order, with upstream's field path and wording; a bad
value is shown as the API's JSON shows it (``-1``, ``"abc"``, ``{"app":"x"}``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from kubesched.api.validation import label_key_errors, label_value_errors, validate_pod
from kubesched.api.workloads import default_workload
from kubesched.errors import InputError

NONNEGATIVE = "must be greater than or equal to 0"  # apimachinery IsNegativeErrorMsg
_PERCENT = re.compile(r"^[0-9]+%$")
PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)
MAX_PARALLELISM_INDEXED = 100_000  # batch validation's maxParallelismForIndexedJob
SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def shown(value: Any) -> str:
    """A bad value as field.Error prints it: numbers bare, strings quoted, objects as JSON."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=isinstance(value, Mapping))


def _invalid(field: str, value: Any, detail: str) -> InputError:
    return InputError(f"Invalid value: {shown(value)}: {detail}", field=field)


def _required(field: str, detail: str = "") -> InputError:
    return InputError(f"Required value: {detail}" if detail else "Required value", field=field)


def _unsupported(field: str, value: Any, allowed: tuple[str, ...]) -> InputError:
    options = ", ".join(f'"{a}"' for a in allowed)
    return InputError(f"Unsupported value: {shown(value)}: supported values: {options}", field=field)


def _int(spec: Mapping[str, Any], key: str, field: str) -> int | None:
    """An integer field (None when absent); a value that is not one is refused as decoding would."""
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(field, value, "must be an integer")
    return value


def _nonnegative(spec: Mapping[str, Any], key: str, field: str) -> int | None:
    value = _int(spec, key, field)
    if value is not None and value < 0:
        raise _invalid(field, value, NONNEGATIVE)
    return value


# -- label selectors (apimachinery meta/v1/validation) ----------------------------------------------
def validate_label_selector(selector: Any, field: str) -> None:
    """``ValidateLabelSelector``: each requirement's operator, values and key, and matchLabels."""
    if not isinstance(selector, Mapping):
        raise _invalid(field, selector, "must be a label selector")
    for i, req in enumerate(selector.get("matchExpressions") or []):
        at = f"{field}.matchExpressions[{i}]"
        if not isinstance(req, Mapping):
            raise _invalid(at, req, "must be a label selector requirement")
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                raise _required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise InputError(
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    field=f"{at}.values",
                )
        else:
            raise _invalid(f"{at}.operator", op, "not a valid selector operator")
        errs = label_key_errors(str(req.get("key") or ""))
        if errs:
            raise _invalid(f"{at}.key", req.get("key") or "", errs[0])
    for key, value in (selector.get("matchLabels") or {}).items():
        errs = label_key_errors(str(key))
        if errs:
            raise _invalid(f"{field}.matchLabels", key, errs[0])
        errs = label_value_errors(str(value))
        if errs:
            raise _invalid(f"{field}.matchLabels", value, errs[0])


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """``LabelSelectorAsSelector(...).Matches``: every matchLabel and every requirement."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        present = key in labels
        if (
            (op == "In" and not (present and labels[key] in values))
            or (op == "NotIn" and present and labels[key] in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def _selector_and_template(spec: Mapping[str, Any], what: str) -> None:
    """The selector is set, valid and (but for a Job's) not empty, and selects the template's labels."""
    selector = spec.get("selector")
    if selector is None:
        raise _required("spec.selector")
    validate_label_selector(selector, "spec.selector")
    if what != "job" and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        raise _invalid("spec.selector", selector, f"empty selector is invalid for {what}")
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise _required("spec.template")
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not selector_matches(selector, labels):
        raise _invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")


def _template_pod(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """``ValidatePodTemplateSpec``: the pod validation the scheduler relies on, under
    ``spec.template``; the template's pod spec."""
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise _required("spec.template")
    try:
        validate_pod({"spec": template.get("spec") or {}})
    except InputError as exc:
        raise InputError(exc.message, field=f"spec.template.{exc.field}" if exc.field else "spec.template") from None
    return template.get("spec") or {}


def _pod_template(spec: Mapping[str, Any], owner: str) -> None:
    """The template of a controller whose pods always restart (``Always`` is their only policy)."""
    pspec = _template_pod(spec)
    policy = pspec.get("restartPolicy") or "Always"
    if policy != "Always":
        raise _unsupported("spec.template.spec.restartPolicy", policy, ("Always",))
    if pspec.get("activeDeadlineSeconds") is not None:
        raise InputError(
            f"Forbidden: activeDeadlineSeconds in {owner} is not Supported",
            field="spec.template.spec.activeDeadlineSeconds",
        )


def _int_or_percent(value: Any, field: str) -> int:
    """``ValidatePositiveIntOrPercent`` and ``getIntOrPercentValue``: the value as a number."""
    if isinstance(value, str):
        if not _PERCENT.match(value):
            raise _invalid(field, value, PERCENT_MSG)
        return int(value[:-1])
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(field, value, "must be an integer or percentage (e.g '5%')")
    if value < 0:
        raise _invalid(field, value, NONNEGATIVE)
    return value


def _at_most_100_percent(value: Any, field: str) -> None:
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) > 100:
        raise _invalid(field, value, "must not be greater than 100%")


# -- the kinds -------------------------------------------------------------------------------------
def validate_deployment(obj: Mapping[str, Any]) -> None:
    """``ValidateDeploymentSpec``."""
    spec = obj.get("spec") or {}
    _nonnegative(spec, "replicas", "spec.replicas")
    _selector_and_template(spec, "deployment")
    _pod_template(spec, "ReplicaSet")
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            raise InputError(
                "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                field="spec.strategy.rollingUpdate",
            )
    elif kind == "RollingUpdate":
        rolling = rolling or {}
        at = "spec.strategy.rollingUpdate"
        unavailable = _int_or_percent(rolling.get("maxUnavailable"), f"{at}.maxUnavailable")
        surge = _int_or_percent(rolling.get("maxSurge"), f"{at}.maxSurge")
        if unavailable == 0 and surge == 0:
            raise _invalid(f"{at}.maxUnavailable", rolling.get("maxUnavailable"), "may not be 0 when `maxSurge` is 0")
        _at_most_100_percent(rolling.get("maxUnavailable"), f"{at}.maxUnavailable")
    else:
        raise _unsupported("spec.strategy", strategy, ("Recreate", "RollingUpdate"))
    min_ready = _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds") or 0
    _nonnegative(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit")
    deadline = _nonnegative(spec, "progressDeadlineSeconds", "spec.progressDeadlineSeconds")
    if deadline is not None and deadline <= min_ready:
        raise _invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")


def validate_replica_set(obj: Mapping[str, Any]) -> None:
    """``ValidateReplicaSetSpec`` (its empty-selector message names a deployment, as upstream's)."""
    spec = obj.get("spec") or {}
    _nonnegative(spec, "replicas", "spec.replicas")
    _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")
    _selector_and_template(spec, "deployment")
    _pod_template(spec, "ReplicaSet")


def validate_stateful_set(obj: Mapping[str, Any]) -> None:
    """``ValidateStatefulSetSpec``."""
    spec = obj.get("spec") or {}
    policy = spec.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        raise _invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type")
    if kind == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            raise _invalid(
                "spec.updateStrategy.rollingUpdate",
                strategy["rollingUpdate"],
                "only allowed for updateStrategy 'RollingUpdate'",
            )
    elif kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate") or {}
        at = "spec.updateStrategy.rollingUpdate"
        _nonnegative(rolling, "partition", f"{at}.partition")
        if rolling.get("maxUnavailable") is not None:
            if _int_or_percent(rolling["maxUnavailable"], f"{at}.maxUnavailable") == 0:
                raise _invalid(f"{at}.maxUnavailable", rolling["maxUnavailable"], "cannot be 0")
            _at_most_100_percent(rolling["maxUnavailable"], f"{at}.maxUnavailable")
    else:
        raise _invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'")
    retention = spec.get("persistentVolumeClaimRetentionPolicy") or {}
    for key in ("whenDeleted", "whenScaled"):
        if retention.get(key) not in ("Retain", "Delete"):
            raise _unsupported(
                f"spec.persistentVolumeClaimRetentionPolicy.{key}", retention.get(key), ("Retain", "Delete")
            )
    _nonnegative(spec, "replicas", "spec.replicas")
    _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")
    _nonnegative(spec.get("ordinals") or {}, "start", "spec.ordinals.start")
    _selector_and_template(spec, "statefulset")
    _pod_template(spec, "StatefulSet")


def validate_daemon_set(obj: Mapping[str, Any]) -> None:
    """``ValidateDaemonSetSpec``."""
    spec = obj.get("spec") or {}
    _selector_and_template(spec, "daemonset")
    _pod_template(spec, "DaemonSet")
    _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type")
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        at = "spec.updateStrategy.rollingUpdate"
        if rolling is None:
            raise _required(at)
        unavailable = _int_or_percent(rolling.get("maxUnavailable", 0), f"{at}.maxUnavailable")
        surge = _int_or_percent(rolling.get("maxSurge", 0), f"{at}.maxSurge")
        _at_most_100_percent(rolling.get("maxUnavailable"), f"{at}.maxUnavailable")
        _at_most_100_percent(rolling.get("maxSurge"), f"{at}.maxSurge")
        if unavailable and surge:
            raise _invalid(f"{at}.maxSurge", rolling.get("maxSurge"), "may not be set when maxUnavailable is non-zero")
        if not unavailable and not surge:
            raise _required(f"{at}.maxUnavailable", "cannot be 0 when maxSurge is 0")
    elif kind != "OnDelete":
        raise _unsupported("spec.updateStrategy", strategy, ("RollingUpdate", "OnDelete"))
    _nonnegative(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit")


def validate_job(obj: Mapping[str, Any]) -> None:
    """``ValidateJob``: the generated selector and the spec (``validateJobSpec``)."""
    spec = obj.get("spec") or {}
    parallelism = _nonnegative(spec, "parallelism", "spec.parallelism")
    completions = _nonnegative(spec, "completions", "spec.completions")
    _nonnegative(spec, "activeDeadlineSeconds", "spec.activeDeadlineSeconds")
    _nonnegative(spec, "backoffLimit", "spec.backoffLimit")
    _nonnegative(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished")
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            raise _unsupported("spec.completionMode", mode, ("NonIndexed", "Indexed"))
        if mode == "Indexed":
            if completions is None:
                raise _required("spec.completions", "when completion mode is Indexed")
            if parallelism is not None and parallelism > MAX_PARALLELISM_INDEXED:
                raise _invalid(
                    "spec.parallelism",
                    parallelism,
                    f"must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed",
                )
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None and replacement not in ("Failed", "TerminatingOrFailed"):
        raise _unsupported("spec.podReplacementPolicy", replacement, ("Failed", "TerminatingOrFailed"))
    policy = _template_pod(spec).get("restartPolicy") or "Always"
    if policy == "Always":
        raise _required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"')
    if policy not in ("OnFailure", "Never"):
        raise _unsupported("spec.template.spec.restartPolicy", policy, ("OnFailure", "Never"))
    _selector_and_template(spec, "job")


VALIDATORS = {
    "Deployment": validate_deployment,
    "ReplicaSet": validate_replica_set,
    "StatefulSet": validate_stateful_set,
    "DaemonSet": validate_daemon_set,
    "Job": validate_job,
}


def validate_workload(kind: str, obj: Mapping[str, Any]) -> None:
    """The kind's validation, on the object with its API defaults (a manifest before it is
    stored has none yet; defaulting is idempotent, so a stored one is unchanged)."""
    check = VALIDATORS.get(kind)
    if check is not None:
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        check(default_workload(kind, dict(obj), uid))
