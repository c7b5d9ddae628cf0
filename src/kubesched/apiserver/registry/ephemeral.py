"""``pods/ephemeralcontainers`` (what ``kubectl debug`` writes): the subresource's strategy
(``pkg/registry/core/pod/strategy.go`` podEphemeralContainersStrategy) keeps everything of the
stored pod but ``spec.ephemeralContainers``, and ``ValidatePodEphemeralContainersUpdate``
(``pkg/apis/core/validation``) refuses what an ephemeral container may not be or do, with
kube-apiserver's messages: names unique across every container of the pod, a target container that
exists, none of the fields kept for the pod's own containers (ports, resources, probes, lifecycle),
no subPath mounts, and existing ephemeral containers neither removed nor changed."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.api.pod_defaults import default_pod_spec
from kubesched.apiserver.registry.strategy import cause_reason, invalid_causes
from kubesched.apiserver.resources import BY_PATH
from kubesched.cluster import validation as object_validation
from kubesched.errors import InputError

# EphemeralContainerCommon's fields outside ``allowedEphemeralContainerFields``, as JSON names
FORBIDDEN = (
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
)


def prepare_ephemeral(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """``dropNonEphemeralContainerUpdates``: the stored pod with the request's ephemeral
    containers (and its resourceVersion, for the precondition); the generation moves on with the
    spec (``updatePodGeneration``)."""
    out = copy.deepcopy(old)
    # the body is decoded with the API's defaults, as every pod is (``SetDefaults_Pod``)
    sent = default_pod_spec(dict(new.get("spec") or {})).get("ephemeralContainers")
    spec = out.setdefault("spec", {})
    if sent:
        spec["ephemeralContainers"] = copy.deepcopy(sent)
    else:
        spec.pop("ephemeralContainers", None)
    version = (new.get("metadata") or {}).get("resourceVersion")
    if version:
        out["metadata"]["resourceVersion"] = version
    if spec != (old.get("spec") or {}):
        out["metadata"]["generation"] = int(out["metadata"].get("generation") or 1) + 1
    return out


def _set(value: Any) -> bool:
    """Go's "not the zero value" for a JSON field."""
    return value not in (None, "", 0, False, [], {})


def validate_ephemeral(new: dict[str, Any], old: dict[str, Any]) -> None:
    """Raise 422 Invalid with every error, in kube-apiserver's order: the pod's own validation,
    each ephemeral container's, then the changes to existing ones."""
    name = str((old.get("metadata") or {}).get("name") or "")
    errors: list[tuple[str, str]] = []
    try:
        object_validation.validate("Pod", new)
    except InputError as exc:
        errors.extend(exc.causes or [(exc.field or "spec", exc.message)])
    if ((old.get("metadata") or {}).get("annotations") or {}).get("kubernetes.io/config.mirror") is not None:
        _raise(name, [("", "Forbidden: static pods do not support ephemeral containers")])
    spec = new.get("spec") or {}
    others = {c.get("name") for key in ("containers", "initContainers") for c in spec.get(key) or [] if c}
    seen = set(others)
    volumes = {v.get("name") for v in spec.get("volumes") or [] if isinstance(v, dict)}
    for i, ec in enumerate(spec.get("ephemeralContainers") or []):
        at = f"spec.ephemeralContainers[{i}]"
        if not isinstance(ec, dict):
            continue
        for k, mount in enumerate(ec.get("volumeMounts") or []):  # validateContainerCommon's
            if isinstance(mount, dict) and mount.get("name") not in volumes:
                errors.append((f"{at}.volumeMounts[{k}].name", f'Not found: "{mount.get("name")}"'))
        if not ec.get("image"):  # validateContainerOnlyForPod's
            errors.append((f"{at}.image", "Required value"))
        ec_name = ec.get("name")
        if ec_name in seen:
            errors.append((f"{at}.name", f'Duplicate value: "{ec_name}"'))
        else:
            seen.add(ec_name)
        target = ec.get("targetContainerName")
        if target and target not in others:
            errors.append((f"{at}.targetContainerName", f'Not found: "{target}"'))
        for field in FORBIDDEN:
            if _set(ec.get(field)):
                errors.append((f"{at}.{field}", "Forbidden: cannot be set for an Ephemeral Container"))
        for k, mount in enumerate(ec.get("volumeMounts") or []):
            for field in ("subPath", "subPathExpr"):
                if isinstance(mount, dict) and mount.get(field):
                    errors.append(
                        (f"{at}.volumeMounts[{k}].{field}", "Forbidden: cannot be set for an Ephemeral Container")
                    )
    sent = {ec.get("name"): ec for ec in spec.get("ephemeralContainers") or [] if isinstance(ec, dict)}
    for existing in (old.get("spec") or {}).get("ephemeralContainers") or []:
        now = sent.get(existing.get("name"))
        if now is None:
            message = f'existing ephemeral containers "{existing.get("name")}" may not be removed\n'
            errors.append(("spec.ephemeralContainers", f"Forbidden: {message}"))
        elif now != existing:
            message = f'existing ephemeral containers "{existing.get("name")}" may not be changed'
            errors.append(("spec.ephemeralContainers", f"Forbidden: {message}"))
    if errors:
        _raise(name, errors)


def _raise(name: str, errors: list[tuple[str, str]]) -> None:
    listed = [f"{f}: {m}" if f else m for f, m in errors]
    summary = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    causes = [{"reason": cause_reason(m), "message": m, "field": f} for f, m in errors]
    raise invalid_causes(BY_PATH[("", "v1", "pods")], name, summary, causes)
