"""The API defaults of the workload kinds (``pkg/apis/apps/v1/defaults.go``,
``pkg/apis/batch/v1/defaults.go``) and the Job strategy's generated selector, applied on
create as kube-apiserver does, so ``kubectl get -o yaml`` shows what a real cluster stores."""

from __future__ import annotations

from typing import Any

from kubesched.api.errors import BadRequest
from kubesched.api.pod_defaults import default_pod_spec

JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


def _rolling(spec: dict[str, Any], key: str, defaults: dict[str, Any]) -> None:
    strategy = _present(spec.get(key) or {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        strategy["rollingUpdate"] = {**defaults, **_present(strategy.get("rollingUpdate") or {})}
    spec[key] = strategy


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields that are set: JSON null decodes to Go's nil pointer, which defaulting fills as
    if the field were absent (``replicas: null`` is 1)."""
    return {k: v for k, v in fields.items() if v is not None} if isinstance(fields, dict) else fields


def default_pod_template(template: dict[str, Any]) -> dict[str, Any]:
    """A pod template with the pod spec defaults that kube-apiserver fills (``SetDefaults_PodSpec``)."""
    spec = {"template": template}
    _template_defaults(spec)
    return dict(spec["template"])


def _template_defaults(spec: dict[str, Any]) -> None:
    template = dict(spec.get("template") or {})
    template["spec"] = default_pod_spec(dict(template.get("spec") or {}))
    spec["template"] = template


def default_workload(kind: str, obj: dict[str, Any], uid: str) -> dict[str, Any]:
    """``obj`` with its kind's defaults; ``uid`` is the one the object is about to get (the Job
    selector names it)."""
    spec = _present(dict(obj.get("spec") or {}))
    if kind == "Deployment":
        spec.setdefault("replicas", 1)
        _rolling(spec, "strategy", {"maxUnavailable": "25%", "maxSurge": "25%"})
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        _template_defaults(spec)
    elif kind == "ReplicaSet":
        spec.setdefault("replicas", 1)
        _template_defaults(spec)
    elif kind == "StatefulSet":
        spec.setdefault("replicas", 1)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        _rolling(spec, "updateStrategy", {"partition": 0})
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("persistentVolumeClaimRetentionPolicy", {"whenDeleted": "Retain", "whenScaled": "Retain"})
        claims = []
        for t in spec.get("volumeClaimTemplates") or []:
            if isinstance(t, dict):
                t = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **t}
                tspec = dict(t.get("spec") or {})
                tspec.setdefault("volumeMode", "Filesystem")
                t["spec"] = tspec
            claims.append(t)
        if claims:
            spec["volumeClaimTemplates"] = claims
        _template_defaults(spec)
    elif kind == "DaemonSet":
        _rolling(spec, "updateStrategy", {"maxUnavailable": 1, "maxSurge": 0})
        spec.setdefault("revisionHistoryLimit", 10)
        _template_defaults(spec)
    elif kind == "Job":
        spec = _job_defaults(obj, spec, uid)
    elif kind == "CronJob":  # SetDefaults_CronJob; the job template's pod template gets the pod defaults
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        template = dict(spec.get("jobTemplate") or {})
        job_spec = _present(dict(template.get("spec") or {}))
        _template_defaults(job_spec)
        template["spec"] = job_spec
        spec["jobTemplate"] = template
    else:
        return obj
    return {**obj, "spec": spec}


def _job_defaults(job: dict[str, Any], spec: dict[str, Any], uid: str) -> dict[str, Any]:
    """``SetDefaults_Job`` and the strategy's ``generateSelector`` (unless manualSelector): the
    controller-uid and job-name labels on the template, a selector on the controller uid."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    _template_defaults(spec)  # restartPolicy Always: validation then asks for Never or OnFailure
    if not spec.get("manualSelector"):
        name = (job.get("metadata") or {}).get("name") or ""
        template = dict(spec["template"])
        tmeta = dict(template.get("metadata") or {})
        tmeta["labels"] = {
            **(tmeta.get("labels") or {}),
            JOB_CONTROLLER_UID: uid,
            JOB_NAME: name,
            "controller-uid": uid,
            "job-name": name,
        }
        template["metadata"] = tmeta
        spec["template"] = template
        spec["selector"] = {"matchLabels": {JOB_CONTROLLER_UID: uid}}
    return spec


def pruned(value: Any) -> Any:
    """``value`` as Go holds it after decoding: null fields and empty objects are the zero value,
    the same as absent (what makes ``EqualIgnoreHash`` see ``resources: {}`` and no resources
    as one template)."""
    if isinstance(value, dict):
        out = {k: pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {}}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


# apps/v1 keeps the DaemonSet's internal spec.templateGeneration in this annotation
# (pkg/apis/apps/v1/conversion.go); its controller labels pods with it and counts a pod whose label
# matches as updated even when its revision hash differs (daemon/util: IsPodUpdated)
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def go_parse_int(text: str) -> int:
    """Go's ``strconv.ParseInt(text, 10, 64)``: an optional sign and decimal digits, within 64 bits;
    otherwise ValueError with Go's message."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        raise ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def given_template_generation(obj: dict[str, Any]) -> int | None:
    """The annotation as decoding reads it (None: absent); one that is not a number is the 400
    conversion answers."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION)
    try:
        return None if value is None else go_parse_int(str(value))
    except ValueError as exc:
        raise BadRequest(f'DaemonSet in version "v1" cannot be handled as a DaemonSet: {exc}') from None


def with_template_generation(obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """The DaemonSet strategy's templateGeneration (``pkg/registry/apps/daemonset/strategy.go``):
    on create the given one, at least 1; on update the stored one, one more when the pod template
    changed; always written back as the annotation."""
    if old is None:
        generation = max(given_template_generation(obj) or 1, 1)
    else:
        generation = given_template_generation(old) or 1
        if (obj.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
    meta = dict(obj.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), TEMPLATE_GENERATION: str(generation)}
    return {**obj, "metadata": meta}
