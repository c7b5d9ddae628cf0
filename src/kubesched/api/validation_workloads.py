"""Validation of the workload kinds (``pkg/apis/apps/validation``, ``pkg/apis/batch/validation``):
Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs are checked after their defaults, as
kube-apiserver checks them, so no controller is ever handed a spec it cannot act on. Each check
raises the first InputError in upstream's order, with upstream's field path and wording; a bad
value is shown as the API's JSON shows it (``-1``, ``"abc"``, ``{"app":"x"}``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator, Iterator, Mapping
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
MISMATCH = "`selector` does not match template `labels`"


class GoStruct(dict[str, Any]):
    """A Go struct's JSON: its fields in declaration order (a plain dict is a Go map: sorted)."""


def shown(value: Any) -> str:
    """A bad value as field.Error prints it: numbers bare, strings quoted, objects as JSON."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(_ordered(value), separators=(",", ":"))


def _ordered(value: Any) -> Any:
    """Go's JSON order: struct fields as declared, map keys sorted."""
    if isinstance(value, GoStruct):
        return {k: _ordered(v) for k, v in value.items()}
    if isinstance(value, Mapping):
        return {k: _ordered(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def selector_json(selector: Any) -> Any:
    """A ``metav1.LabelSelector`` as Go encodes it: matchLabels, then matchExpressions (each key,
    operator, values), empty ones left out."""
    if not isinstance(selector, Mapping):
        return selector
    out = GoStruct()
    if selector.get("matchLabels"):
        out["matchLabels"] = dict(selector["matchLabels"])
    if selector.get("matchExpressions"):
        out["matchExpressions"] = [
            GoStruct({k: r[k] for k in ("key", "operator", "values") if isinstance(r, Mapping) and r.get(k)})
            for r in selector["matchExpressions"]
        ]
    return out


def _invalid(field: str, value: Any, detail: str) -> InputError:
    return InputError(
        f"Invalid value: {shown(value)}: {detail}" if detail else f"Invalid value: {shown(value)}", field=field
    )


def _required(field: str, detail: str = "") -> InputError:
    return InputError(f"Required value: {detail}" if detail else "Required value", field=field)


def _unsupported(field: str, value: Any, allowed: tuple[str, ...]) -> InputError:
    options = ", ".join(f'"{a}"' for a in allowed)
    return InputError(f"Unsupported value: {shown(value)}: supported values: {options}", field=field)


def _forbidden(field: str, detail: str) -> InputError:
    return InputError(f"Forbidden: {detail}", field=field)


Errors = Iterator[InputError]  # a validator yields every error it finds, in upstream's order


def _int(spec: Mapping[str, Any], key: str, field: str) -> Generator[InputError, None, int | None]:
    """An integer field (None when absent); a value that is not one is refused as decoding would."""
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        yield _invalid(field, value, "must be an integer")
        return None
    return value


def _nonnegative(spec: Mapping[str, Any], key: str, field: str) -> Generator[InputError, None, int | None]:
    value = yield from _int(spec, key, field)
    if value is not None and value < 0:
        yield _invalid(field, value, NONNEGATIVE)
    return value


def _go_struct(value: Any, names: dict[str, str]) -> Any:
    """An internal (untagged) Go struct as field.Error prints it: JSON with Go's field names and
    every field present (``{"Type":"BlueGreen","RollingUpdate":null}``)."""
    if not isinstance(value, Mapping):
        return value
    return GoStruct({go: value.get(key) for key, go in names.items()})


STRATEGY = {"type": "Type", "rollingUpdate": "RollingUpdate"}


def _labels(template: Mapping[str, Any]) -> Any:
    """A template's labels as Go holds them: a nil map (printed null) when there are none."""
    return (template.get("metadata") or {}).get("labels")


# -- label selectors (apimachinery meta/v1/validation) ----------------------------------------------
def label_selector_errors(selector: Any, field: str) -> Errors:
    """``ValidateLabelSelector``: each requirement's operator, values and key, and matchLabels."""
    if not isinstance(selector, Mapping):
        yield _invalid(field, selector, "must be a label selector")
        return
    for i, req in enumerate(selector.get("matchExpressions") or []):
        at = f"{field}.matchExpressions[{i}]"
        if not isinstance(req, Mapping):
            yield _invalid(at, req, "must be a label selector requirement")
            continue
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                yield _required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                yield _forbidden(f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        else:
            yield _invalid(f"{at}.operator", op, "not a valid selector operator")
        errs = label_key_errors(str(req.get("key") or ""))
        if errs:
            yield _invalid(f"{at}.key", req.get("key") or "", errs[0])
    for key, value in (selector.get("matchLabels") or {}).items():
        errs = label_key_errors(str(key))
        if errs:
            yield _invalid(f"{field}.matchLabels", key, errs[0])
        errs = label_value_errors(str(value))
        if errs:
            yield _invalid(f"{field}.matchLabels", value, errs[0])


def selector_convertible(selector: Any) -> bool:
    """Whether ``LabelSelectorAsSelector`` takes it (a nil selector is, and selects nothing)."""
    if selector is None:
        return True
    return isinstance(selector, Mapping) and not any(True for _ in label_selector_errors(selector, ""))


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any] | None) -> bool:
    """``LabelSelectorAsSelector(...).Matches``: every matchLabel and every requirement; a nil
    selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    labels = labels or {}
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


def _selected(selector: Any) -> bool:
    """``!selector.Empty()``: a nil selector (labels.Nothing) is not empty; ``{}`` is."""
    return selector is None or bool(selector.get("matchLabels") or selector.get("matchExpressions"))


def _selector_checks(spec: Mapping[str, Any], what: str) -> Errors:
    """The selector is set, valid, and not empty."""
    selector = spec.get("selector")
    if selector is None:
        yield _required("spec.selector")
        return
    yield from label_selector_errors(selector, "spec.selector")
    if isinstance(selector, Mapping) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        yield _invalid("spec.selector", selector_json(selector), f"empty selector is invalid for {what}")


def _template_matches(spec: Mapping[str, Any]) -> Errors:
    selector, template = spec.get("selector"), spec.get("template") or {}
    if _selected(selector) and not selector_matches(selector, _labels(template)):
        yield _invalid(
            "spec.template.metadata.labels", _labels(template), "`selector` does not match template `labels`"
        )


def _template_pod(spec: Mapping[str, Any]) -> Errors:
    """``ValidatePodTemplateSpec``: the pod validation the scheduler relies on, under ``spec.template``."""
    template = spec.get("template") or {}
    try:
        validate_pod({"spec": template.get("spec") or {}})
    except InputError as exc:
        yield InputError(exc.message, field=f"spec.template.{exc.field}" if exc.field else "spec.template")


def _always_restarts(spec: Mapping[str, Any], owner: str) -> Errors:
    """The pods of a controller that keeps them running restart ``Always``, with no deadline."""
    pspec = (spec.get("template") or {}).get("spec") or {}
    policy = pspec.get("restartPolicy") or "Always"
    if policy != "Always":
        yield _unsupported("spec.template.spec.restartPolicy", policy, ("Always",))
    if pspec.get("activeDeadlineSeconds") is not None:
        yield _forbidden(
            "spec.template.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {owner} is not Supported"
        )


def _int_or_percent(value: Any, field: str) -> Generator[InputError, None, int]:
    """``ValidatePositiveIntOrPercent``, then ``getIntOrPercentValue``: the value as a number (a
    string that is no percentage counts as 0, as IntValue parses it)."""
    if isinstance(value, str):
        if not _PERCENT.match(value):
            yield _invalid(field, value, PERCENT_MSG)
            return int(value) if value.isdigit() else 0
        return int(value[:-1])
    if isinstance(value, bool) or not isinstance(value, int):
        yield _invalid(field, value, "must be an integer or percentage (e.g '5%')")
        return 0
    if value < 0:
        yield _invalid(field, value, NONNEGATIVE)
    return value


def _at_most_100_percent(value: Any, field: str) -> Errors:
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) > 100:
        yield _invalid(field, value, "must not be greater than 100%")


# -- the kinds -------------------------------------------------------------------------------------
def _replica_set_template(spec: Mapping[str, Any], what: str) -> Errors:
    """The selector and, when it converts, ``ValidatePodTemplateSpecForReplicaSet``."""
    yield from _selector_checks(spec, what)
    if not selector_convertible(spec.get("selector")):
        yield _invalid("spec.selector", selector_json(spec.get("selector")), "invalid label selector")
        return
    yield from _template_matches(spec)
    yield from _template_pod(spec)
    yield from _always_restarts(spec, "ReplicaSet")


def deployment_errors(obj: Mapping[str, Any]) -> Errors:
    """``ValidateDeploymentSpec``."""
    spec = obj.get("spec") or {}
    yield from _nonnegative(spec, "replicas", "spec.replicas")
    yield from _replica_set_template(spec, "deployment")
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            yield _forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")
    elif kind == "RollingUpdate":
        rolling = rolling or {}
        at = "spec.strategy.rollingUpdate"
        unavailable = yield from _int_or_percent(rolling.get("maxUnavailable"), f"{at}.maxUnavailable")
        surge = yield from _int_or_percent(rolling.get("maxSurge"), f"{at}.maxSurge")
        if unavailable == 0 and surge == 0:
            yield _invalid(f"{at}.maxUnavailable", rolling.get("maxUnavailable"), "may not be 0 when `maxSurge` is 0")
        yield from _at_most_100_percent(rolling.get("maxUnavailable"), f"{at}.maxUnavailable")
    else:
        yield _unsupported("spec.strategy", _go_struct(strategy, STRATEGY), ("Recreate", "RollingUpdate"))
    min_ready = (yield from _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")) or 0
    yield from _nonnegative(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit")
    deadline = yield from _nonnegative(spec, "progressDeadlineSeconds", "spec.progressDeadlineSeconds")
    if deadline is not None and deadline <= min_ready:
        yield _invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")


def replica_set_errors(obj: Mapping[str, Any]) -> Errors:
    """``ValidateReplicaSetSpec`` (its empty-selector message names a deployment, as upstream's)."""
    spec = obj.get("spec") or {}
    yield from _nonnegative(spec, "replicas", "spec.replicas")
    yield from _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")
    yield from _replica_set_template(spec, "deployment")


def stateful_set_errors(obj: Mapping[str, Any]) -> Errors:
    """``ValidateStatefulSetSpec``."""
    spec = obj.get("spec") or {}
    policy = spec.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        yield _invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type")
    if kind == "OnDelete":
        if strategy.get("rollingUpdate") is not None:
            yield _invalid(
                "spec.updateStrategy.rollingUpdate",
                _go_struct(strategy["rollingUpdate"], {"partition": "Partition", "maxUnavailable": "MaxUnavailable"}),
                "only allowed for updateStrategy 'RollingUpdate'",
            )
    elif kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate") or {}
        at = "spec.updateStrategy.rollingUpdate"
        yield from _nonnegative(rolling, "partition", f"{at}.partition")
        if rolling.get("maxUnavailable") is not None:
            if (yield from _int_or_percent(rolling["maxUnavailable"], f"{at}.maxUnavailable")) == 0:
                yield _invalid(f"{at}.maxUnavailable", rolling["maxUnavailable"], "cannot be 0")
            yield from _at_most_100_percent(rolling["maxUnavailable"], f"{at}.maxUnavailable")
    else:
        yield _invalid("spec.updateStrategy", _go_struct(strategy, STRATEGY), "must be 'RollingUpdate' or 'OnDelete'")
    retention = spec.get("persistentVolumeClaimRetentionPolicy") or {}
    for key in ("whenDeleted", "whenScaled"):
        if retention.get(key) not in ("Retain", "Delete"):
            field = f"spec.persistentVolumeClaimRetentionPolicy.{key}"
            yield _unsupported(field, retention.get(key), ("Retain", "Delete"))
    yield from _nonnegative(spec, "replicas", "spec.replicas")
    yield from _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")
    yield from _nonnegative(spec.get("ordinals") or {}, "start", "spec.ordinals.start")
    yield from _selector_checks(spec, "statefulset")
    if not selector_convertible(spec.get("selector")):
        yield _invalid("spec.selector", selector_json(spec.get("selector")), "")
    else:
        yield from _template_matches(spec)
        yield from _template_pod(spec)
    yield from _always_restarts(spec, "StatefulSet")


def daemon_set_errors(obj: Mapping[str, Any]) -> Errors:
    """``ValidateDaemonSetSpec``."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    if selector is not None:
        yield from label_selector_errors(selector, "spec.selector")
    if selector is not None and selector_convertible(selector):
        yield from _template_matches(spec)
    if isinstance(selector, Mapping) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        yield _invalid("spec.selector", selector_json(selector), "empty selector is invalid for daemonset")
    yield from _template_pod(spec)
    yield from _always_restarts(spec, "DaemonSet")
    yield from _nonnegative(spec, "minReadySeconds", "spec.minReadySeconds")
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type")
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        at = "spec.updateStrategy.rollingUpdate"
        if rolling is None:
            yield _required(at)
        else:
            unavailable = yield from _int_or_percent(rolling.get("maxUnavailable", 0), f"{at}.maxUnavailable")
            surge = yield from _int_or_percent(rolling.get("maxSurge", 0), f"{at}.maxSurge")
            yield from _at_most_100_percent(rolling.get("maxUnavailable"), f"{at}.maxUnavailable")
            yield from _at_most_100_percent(rolling.get("maxSurge"), f"{at}.maxSurge")
            if unavailable and surge:
                yield _invalid(
                    f"{at}.maxSurge", rolling.get("maxSurge"), "may not be set when maxUnavailable is non-zero"
                )
            if not unavailable and not surge:
                yield _required(f"{at}.maxUnavailable", "cannot be 0 when maxSurge is 0")
    elif kind != "OnDelete":
        yield _unsupported("spec.updateStrategy", _go_struct(strategy, STRATEGY), ("RollingUpdate", "OnDelete"))
    yield from _nonnegative(spec, "revisionHistoryLimit", "spec.revisionHistoryLimit")


def job_errors(obj: Mapping[str, Any]) -> Errors:
    """``ValidateJob``: the spec (``validateJobSpec``), then the selector against the template."""
    spec = obj.get("spec") or {}
    parallelism = yield from _nonnegative(spec, "parallelism", "spec.parallelism")
    completions = yield from _nonnegative(spec, "completions", "spec.completions")
    yield from _nonnegative(spec, "activeDeadlineSeconds", "spec.activeDeadlineSeconds")
    yield from _nonnegative(spec, "backoffLimit", "spec.backoffLimit")
    yield from _nonnegative(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished")
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            yield _unsupported("spec.completionMode", mode, ("NonIndexed", "Indexed"))
        if mode == "Indexed":
            if completions is None:
                yield _required("spec.completions", "when completion mode is Indexed")
            if parallelism is not None and parallelism > MAX_PARALLELISM_INDEXED:
                yield _invalid(
                    "spec.parallelism",
                    parallelism,
                    f"must be less than or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed",
                )
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None and replacement not in ("Failed", "TerminatingOrFailed"):
        yield _unsupported("spec.podReplacementPolicy", replacement, ("Failed", "TerminatingOrFailed"))
    too_long = {v for v in (_labels(spec.get("template") or {}) or {}).values() if isinstance(v, str) and len(v) > 63}
    for value in sorted(too_long):  # the job-name labels carry the Job's name
        yield _invalid("spec.template.labels", value, "must be no more than 63 bytes")
    yield from _template_pod(spec)
    policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") or "Always"
    if policy == "Always":
        yield _required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"')
    elif policy not in ("OnFailure", "Never"):
        yield _unsupported("spec.template.spec.restartPolicy", policy, ("OnFailure", "Never"))
    selector = spec.get("selector")
    if selector is None:
        yield _required("spec.selector")
    else:
        yield from label_selector_errors(selector, "spec.selector")
        if selector_convertible(selector) and not selector_matches(selector, _labels(spec.get("template") or {})):
            labels = _labels(spec.get("template") or {})
            yield _invalid("spec.template.metadata.labels", labels, MISMATCH)


CRON_JOB_NAME_MAX = 63 - 11  # DNS1035LabelMaxLength less the Jobs' ``-<minutes>`` suffix


def hpa_errors(obj: Mapping[str, Any]) -> Errors:
    """``validateHorizontalPodAutoscalerSpec``: minReplicas at least 0 (0 only with an Object or
    External metric, to scale to zero), maxReplicas set and at least minReplicas."""
    spec = obj.get("spec") or {}
    low = yield from _int(spec, "minReplicas", "spec.minReplicas")
    high = yield from _int(spec, "maxReplicas", "spec.maxReplicas")
    if low is not None and low < 0:
        yield _invalid("spec.minReplicas", low, "must be greater than or equal to 0")
    if low is not None and (high or 0) < low:
        yield _invalid("spec.maxReplicas", high or 0, "must be greater than or equal to `minReplicas`")
    if not high:
        yield _required("spec.maxReplicas")
    elif high < 0:
        yield _invalid("spec.maxReplicas", high, "must be greater than or equal to 1")
    metrics = spec.get("metrics") or []
    if low == 0 and not any(isinstance(m, dict) and m.get("type") in ("Object", "External") for m in metrics):
        yield _forbidden(
            "spec.metrics", "must specify at least one Object or External metric to support scaling to zero replicas"
        )


def cron_job_errors(obj: Mapping[str, Any]) -> Errors:
    """``ValidateCronJob``: a schedule cron understands (no TZ= prefix), a time zone the tz database
    has, the concurrency policy, non-negative limits, and the job template as a Job's spec."""
    from kubesched.api.cron import parse_schedule

    spec = obj.get("spec") or {}
    name = str((obj.get("metadata") or {}).get("name") or "")
    if len(name) > CRON_JOB_NAME_MAX:  # ValidateCronJobCreate: its Jobs' names add 11 characters
        yield _invalid("metadata.name", name, f"must be no more than {CRON_JOB_NAME_MAX} characters")
    schedule = spec.get("schedule")
    if not schedule:
        yield _required("spec.schedule")
    else:
        try:
            parse_schedule(str(schedule))
        except ValueError as exc:
            yield _invalid("spec.schedule", schedule, str(exc))
    zone = spec.get("timeZone")
    if zone is not None:
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(str(zone))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            yield _invalid("spec.timeZone", zone, "unknown time zone " + str(zone))
    policy = spec.get("concurrencyPolicy")
    if policy is not None and policy not in ("Allow", "Forbid", "Replace"):
        yield _unsupported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace"))
    for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        yield from _nonnegative(spec, key, f"spec.{key}")
    template = (spec.get("jobTemplate") or {}).get("spec") or {}
    for e in job_errors({"spec": {**template, "manualSelector": True, "selector": template.get("selector") or {}}}):
        if e.field and e.field.startswith("spec.selector"):
            continue  # the Job the controller makes gets its selector then
        e.field = "spec.jobTemplate." + (e.field or "spec")
        yield e


VALIDATORS: dict[str, Callable[[Mapping[str, Any]], Errors]] = {
    "Deployment": deployment_errors,
    "ReplicaSet": replica_set_errors,
    "StatefulSet": stateful_set_errors,
    "DaemonSet": daemon_set_errors,
    "Job": job_errors,
    "CronJob": cron_job_errors,
    "HorizontalPodAutoscaler": hpa_errors,
}


def validate_workload(kind: str, obj: Mapping[str, Any]) -> None:
    """The kind's validation, on the object with its API defaults (a manifest before it is stored
    has none yet; defaulting is idempotent, so a stored one is unchanged). One error is raised as
    it is; several as one InputError whose ``causes`` hold them all and whose message lists them
    as kube-apiserver's aggregate does (``[spec.a: …, spec.b: …]``)."""
    errors_of = VALIDATORS.get(kind)
    if errors_of is None:
        return
    uid = str((obj.get("metadata") or {}).get("uid") or "")
    errors = list(errors_of(default_workload(kind, dict(obj), uid)))
    if len(errors) == 1:
        raise errors[0]
    if errors:
        listed = ", ".join(f"{e.field}: {e.message}" for e in errors)
        raise InputError(f"[{listed}]", causes=[(e.field or "", e.message) for e in errors])
