"""``pods/resize`` (in-place pod resize, GA since v1.35): the resize strategy
(``pkg/registry/core/pod/strategy.go`` podResizeStrategy) keeps everything of the stored pod but
the containers' ``resources`` and ``resizePolicy`` and the pod-level ``resources``, and
``ValidatePodResize`` (``pkg/apis/core/validation``) refuses what a resize may not do, with
kube-apiserver's messages."""

from __future__ import annotations

import copy
from typing import Any

from kubesched.apiserver.registry.strategy import cause_reason, invalid_causes, pod_qos
from kubesched.apiserver.resources import BY_PATH
from kubesched.cluster import validation as object_validation
from kubesched.errors import InputError

MUTABLE = ("cpu", "memory")


def prepare_resize(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """``dropNonResizeUpdates``: the stored pod with the request's resources; containers added,
    removed or renamed are left as sent, for validation to refuse."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    out = copy.deepcopy(old)
    meta = out["metadata"]
    if (new.get("metadata") or {}).get("resourceVersion"):
        meta["resourceVersion"] = new["metadata"]["resourceVersion"]
    spec = out.setdefault("spec", {})
    for key in ("containers", "initContainers"):
        sent, stored = new_spec.get(key) or [], old_spec.get(key) or []
        if len(sent) != len(stored):
            spec[key] = copy.deepcopy(sent)
            continue
        merged: list[Any] = []
        for s, o in zip(sent, stored, strict=True):
            if not isinstance(s, dict) or s.get("name") != o.get("name"):
                merged = copy.deepcopy(sent)
                break
            c = copy.deepcopy(o)
            for field in ("resources", "resizePolicy"):
                if field in s:
                    c[field] = copy.deepcopy(s[field])
                else:
                    c.pop(field, None)
            merged.append(c)
        if key in spec or merged:
            spec[key] = merged
    if "resources" in new_spec:
        spec["resources"] = copy.deepcopy(new_spec["resources"])
    if spec != old_spec:  # updatePodGeneration
        meta["generation"] = int(meta.get("generation") or 1) + 1
    return out


def validate_resize(new: dict[str, Any], old: dict[str, Any]) -> None:
    """``ValidatePodResize``: raise 422 Invalid with every error, as kube-apiserver lists them."""
    name = str((old.get("metadata") or {}).get("name") or "")
    errors: list[tuple[str, str]] = []  # (field, message)
    try:  # validatePodMetadataAndSpec comes first
        object_validation.validate("Pod", new)
    except InputError as exc:
        errors.extend(exc.causes or [(exc.field or "spec", exc.message)])
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if ((old.get("metadata") or {}).get("annotations") or {}).get("kubernetes.io/config.mirror") is not None:
        _raise(name, [("", "Forbidden: static pods cannot be resized")])
    if (old_spec.get("os") or {}).get("name") == "windows":
        _raise(name, [("", "Forbidden: windows pods cannot be resized")])
    old_qos = (old.get("status") or {}).get("qosClass") or pod_qos(old_spec)
    if old_qos != pod_qos(new_spec):
        qos = (new.get("status") or {}).get("qosClass") or ""
        errors.append(("spec", f'Invalid value: "{qos}": Pod QOS Class may not change as a result of resizing'))
    for cs in (old.get("status") or {}).get("containerStatuses") or []:
        if ((cs or {}).get("state") or {}).get("running") is not None:
            if cs.get("resources") is None:
                errors.append(("spec", "Forbidden: Pod running on node without support for resize"))
            break
    ordering = _ordering_errors(new_spec, old_spec)
    if ordering:
        _raise(name, errors + ordering)
    for key, label in (("initContainers", "initContainers"), ("containers", "containers")):
        # (every init container may resize: InPlacePodVerticalScalingInitContainers is GA in v1.37)
        for i, (n, o) in enumerate(zip(new_spec.get(key) or [], old_spec.get(key) or [], strict=True)):
            path = f"spec.{label}[{i}].resources"
            nres, ores = n.get("resources") or {}, o.get("resources") or {}
            for part in ("requests", "limits"):
                if _removed(nres.get(part) or {}, ores.get(part) or {}):
                    errors.append((f"{path}.{part}", f"Forbidden: resource {part} cannot be removed"))
    for n, o in zip(new_spec.get("containers") or [], old_spec.get("containers") or [], strict=True):
        if _beyond_cpu_memory(n) != _beyond_cpu_memory(o):
            errors.append(("spec", "Forbidden: only cpu and memory resources are mutable"))
    inits = zip(new_spec.get("initContainers") or [], old_spec.get("initContainers") or [], strict=True)
    for i, (n, o) in enumerate(inits):
        if _beyond_cpu_memory(n) != _beyond_cpu_memory(o):
            message = "Forbidden: only cpu and memory resources for init or sidecar containers are mutable"
            errors.append((f"spec.initContainers[{i}]", message))
        restarts = any((p or {}).get("restartPolicy") == "RestartContainer" for p in n.get("resizePolicy") or [])
        if n != o and n.get("restartPolicy") != "Always" and restarts:
            message = (
                "Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"
            )
            errors.append((f"spec.initContainers[{i}]", message))
    if errors:
        _raise(name, errors)


def _ordering_errors(new_spec: dict[str, Any], old_spec: dict[str, Any]) -> list[tuple[str, str]]:
    """``validatePodResizeContainerOrdering``."""
    out = []
    for key in ("containers", "initContainers"):
        new, old = new_spec.get(key) or [], old_spec.get(key) or []
        if len(new) != len(old):
            out.append((f"spec.{key}", f"Forbidden: {key} may not be added or removed on resize"))
            continue
        for i, (n, o) in enumerate(zip(new, old, strict=True)):
            if (n or {}).get("name") != o.get("name"):
                out.append((f"spec.{key}[{i}].name", f"Forbidden: {key} may not be renamed or reordered on resize"))
    return out


def _removed(new: dict[str, Any], old: dict[str, Any]) -> bool:
    return len(old) > len(new) or any(k not in new for k in old)


def _beyond_cpu_memory(container: dict[str, Any]) -> dict[str, Any]:
    """The container as ``dropCPUMemoryResourcesFromContainer`` then ``Semantic.DeepEqual`` compare
    it: cpu and memory requests and limits left out, empty resources the same as none (a changed
    resizePolicy stays, and is refused)."""
    out = dict(container)
    res = {k: v for k, v in (container.get("resources") or {}).items() if v and k not in ("requests", "limits")}
    for part in ("requests", "limits"):
        rest = {k: v for k, v in ((container.get("resources") or {}).get(part) or {}).items() if k not in MUTABLE}
        if rest:
            res[part] = rest
    if res:
        out["resources"] = res
    else:
        out.pop("resources", None)
    return out


def _raise(name: str, errors: list[tuple[str, str]]) -> None:
    causes = [{"reason": cause_reason(m), "message": m, "field": f} for f, m in errors]
    parts = [f"{f}: {m}" if f else m for f, m in errors]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    raise invalid_causes(BY_PATH[("", "v1", "pods")], name, summary, causes)
