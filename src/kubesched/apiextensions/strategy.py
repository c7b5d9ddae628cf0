"""The custom resource strategy (apiextensions-apiserver's ``registry/customresource``): what a
create or update of a custom resource goes through wherever it comes from: system metadata reset,
the status left to its subresource, defaults, then metadata, the structural schema and the scale
subresource's replicas checked, failures as one 422 listing every field error."""

from __future__ import annotations

import copy
import re
from typing import Any

from kubesched.api.errors import Invalid, NotFound
from kubesched.api.names import generate_name
from kubesched.api.validation import validate_meta
from kubesched.apiextensions import definitions, rules, structural
from kubesched.apiextensions.definitions import CustomResource, Scale
from kubesched.apiextensions.registry import CustomResources
from kubesched.apiextensions.structural import FieldError, go_shown
from kubesched.clock import rfc3339
from kubesched.errors import InputError

CRD_KIND = definitions.KIND
CRD_GROUP = definitions.GROUP


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> Invalid:
    """``errors.NewInvalid`` over field errors: one listed as it is, several as ``[a, b]``."""
    lines = [f"{e.field}: {e.message}" for e in errors]
    listed = lines[0] if len(lines) == 1 else "[" + ", ".join(lines) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return Invalid(
        f'{qualified} "{name}" is invalid: {listed}',
        details={
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [{"reason": e.reason, "message": e.message, "field": e.field} for e in errors],
        },
    )


# ``hasBlockingErr`` (registry/customresource/strategy.go)
BLOCKING = (
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
)
RULES_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation"
)


def _errors(cr: CustomResource, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """Metadata, the schema, its CEL rules (``old``: the stored object, for transition rules)
    and the scale subresource's paths, as the strategy's Validate."""
    r = cr.resource
    errors: list[FieldError] = []
    try:
        validate_meta(r.kind, obj, namespaced=r.namespaced)
    except InputError as exc:
        errors.append(FieldError(exc.field or "metadata", _reason(exc.message), exc.message))
    errors.extend(structural.validate(cr.schema, obj))
    if rules.has_rules(cr.schema):  # a type, enum, length or required error blocks the rules
        if any(e.reason in BLOCKING for e in errors):
            errors.append(FieldError("<nil>", "FieldValueInvalid", f"Invalid value: null: {RULES_NOT_CHECKED}"))
        else:
            errors.extend(rules.validate(cr.schema, obj, old, old is not None))
    if cr.scale is not None:
        errors.extend(_scale_errors(cr.scale, obj))
    return errors


def _reason(message: str) -> str:
    return "FieldValueRequired" if message.startswith("Required value") else "FieldValueInvalid"


def _scale_errors(scale: Scale, obj: dict[str, Any]) -> list[FieldError]:
    """``ValidateCustomResource``'s scale checks: the replicas at specReplicasPath are a
    non-negative integer when present."""
    found, value, problem = lookup(obj, scale.spec_replicas)
    if problem:
        return [
            FieldError(
                scale.spec_replicas,
                "FieldValueInvalid",
                f"Invalid value: 0: {scale.spec_replicas} accessor error: {problem}",
            )
        ]
    if not found:
        return []
    if isinstance(value, bool) or not isinstance(value, int):
        problem = f"{go_shown_raw(value)} is of the type {_go_type(value)}, expected int64"
        return [
            FieldError(
                scale.spec_replicas,
                "FieldValueInvalid",
                f"Invalid value: 0: {scale.spec_replicas} accessor error: {problem}",
            )
        ]
    if value < 0:
        return [
            FieldError(
                scale.spec_replicas, "FieldValueInvalid", f"Invalid value: {value}: should be a non-negative integer"
            )
        ]
    return []


def go_shown_raw(value: Any) -> str:
    """``%v`` of a decoded JSON value."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# how Go's ``%T`` names a decoded JSON value (unstructured: numbers are int64 or float64)
_GO_TYPES: dict[type, str] = {
    str: "string",
    bool: "bool",
    int: "int64",
    float: "float64",
    dict: "map[string]interface{}",
    list: "[]interface{}",
}


def _go_type(value: Any) -> str:
    return _GO_TYPES.get(type(value), "int64")


_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def lookup(obj: Any, path: str) -> tuple[bool, Any, str]:
    """A simple JSON path (``.spec.replicas``, ``.status.conditions[0].type``): (found, value,
    an accessor problem when a step meets something that is not an object)."""
    current = obj
    for m in _STEP.finditer(path):
        key, index = m.group(1), m.group(2)
        if key is not None:
            if current is None:
                return False, None, ""
            if not isinstance(current, dict):
                return (
                    False,
                    None,
                    f"{go_shown_raw(current)} is of the type {_go_type(current)}, expected map[string]interface{{}}",
                )
            if key not in current:
                return False, None, ""
            current = current[key]
        else:
            if not isinstance(current, list) or int(index) >= len(current):
                return False, None, ""
            current = current[int(index)]
    return True, current, ""


def set_path(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``value`` at the simple path ``.a.b`` (objects made as needed)."""
    out = copy.deepcopy(obj)
    keys = [m.group(1) for m in _STEP.finditer(path) if m.group(1) is not None]
    node = out
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[keys[-1]] = value
    return out


def _prepared(cr: CustomResource, obj: dict[str, Any]) -> dict[str, Any]:
    obj = {**obj, "apiVersion": cr.resource.group_version, "kind": cr.resource.kind}
    structural.apply_defaults(cr.schema, obj)
    return obj


def admit_create(cr: CustomResource, obj: dict[str, Any]) -> dict[str, Any]:
    """``PrepareForCreate`` and ``Validate``: system metadata reset, the status dropped when the
    status subresource owns it, defaults set, then the checks."""
    meta = dict(obj.get("metadata") or {})
    for key in ("resourceVersion", "uid", "deletionTimestamp", "creationTimestamp", "generation"):
        meta.pop(key, None)
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generate_name(str(meta["generateName"]))
    if cr.resource.namespaced:
        meta.setdefault("namespace", "default")
    else:
        meta.pop("namespace", None)
    obj = {**obj, "metadata": meta}
    if cr.status:
        obj.pop("status", None)
    obj = _prepared(cr, obj)
    errors = _errors(cr, obj)
    if errors:
        raise invalid(cr.resource.kind, cr.resource.group, str(meta.get("name") or ""), errors)
    return obj


def prepare_update(cr: CustomResource, new: dict[str, Any], old: dict[str, Any], subresource: str) -> dict[str, Any]:
    """``PrepareForUpdate`` (the main resource keeps the stored status when the status
    subresource is on; ``/status`` changes nothing else), defaults, and ``ValidateUpdate``. An
    update names the resourceVersion it replaces (custom resources allow no unconditional one)."""
    r = cr.resource
    name = str((new.get("metadata") or {}).get("name") or "")
    if not (new.get("metadata") or {}).get("resourceVersion"):
        raise Invalid(
            f'{r.qualified} "{name}" is invalid: '
            "metadata.resourceVersion: Invalid value: 0: must be specified for an update",
            details={
                "name": name,
                "group": r.group,
                "kind": r.plural,
                "causes": [
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: 0: must be specified for an update",
                        "field": "metadata.resourceVersion",
                    }
                ],
            },
        )
    if subresource == "status":
        out = {**old, "status": new.get("status")}
        if out["status"] is None:
            out.pop("status")
        out["metadata"] = {**old["metadata"], "resourceVersion": new["metadata"]["resourceVersion"]}
        new = out
    elif cr.status:
        new = {k: v for k, v in new.items() if k != "status"}
        if "status" in old:
            new["status"] = old["status"]
    new = _prepared(cr, new)
    errors = _errors(cr, new, old)
    if errors:
        raise invalid(r.kind, r.group, name, errors)
    return new


def scaled(cr: CustomResource, obj: dict[str, Any], replicas: int) -> dict[str, Any]:
    """The object with ``replicas`` at specReplicasPath, validated as any update."""
    assert cr.scale is not None
    new = set_path(obj, cr.scale.spec_replicas, replicas)
    errors = _errors(cr, new)
    if errors:
        raise invalid(cr.resource.kind, cr.resource.group, str(obj["metadata"].get("name") or ""), errors)
    return new


def plural_group(kind: str) -> tuple[str, str]:
    """A custom Store kind's plural and group (``crontabs.stable.example.com``)."""
    plural, _, group = kind.partition(".")
    return plural, group


def custom_for(custom: CustomResources, kind: str) -> CustomResource:
    """The served resource of a Store kind, or NotFound once its CRD is gone."""
    cr = custom.by_kind(kind)
    if cr is None:
        plural, _, group = kind.partition(".")
        raise NotFound(
            f"the server could not find the requested resource ({plural}.{group})",
            details={"group": group, "kind": plural},
        )
    return cr


# -- the definitions' own strategy ---------------------------------------------------------------


def _crd_invalid(name: str, errors: list[FieldError]) -> Invalid:
    return invalid(CRD_KIND, CRD_GROUP, name, errors)


def admit_crd_create(obj: dict[str, Any], now: float) -> dict[str, Any]:
    """A new CRD: defaulted, validated, and (as the naming and establishing controllers do at
    once here) accepted and Established, so its resource is served when the create returns."""
    obj = definitions.default(obj)
    errors = definitions.validate(obj)
    name = str((obj.get("metadata") or {}).get("name") or "")
    if errors:
        raise _crd_invalid(name, errors)
    obj = {**obj, "status": definitions.initial_status(obj)}
    obj["status"] = definitions.established_status(obj, rfc3339(now))
    return obj


def admit_crd_update(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """An update of a CRD's spec: defaulted and validated; the scope and group cannot change;
    the accepted names follow the spec and a new storage version joins storedVersions."""
    new = definitions.default(new)
    name = str((new.get("metadata") or {}).get("name") or "")
    errors = definitions.validate(new, old)
    for key in ("scope", "group"):
        before, after = (old.get("spec") or {}).get(key), (new.get("spec") or {}).get(key)
        if before != after:
            errors.append(
                FieldError(f"spec.{key}", "FieldValueInvalid", f"Invalid value: {go_shown(after)}: field is immutable")
            )
    if errors:
        raise _crd_invalid(name, errors)
    status = dict(old.get("status") or {})
    stored = list(status.get("storedVersions") or [])
    for v in (new.get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("storage") and v.get("name") not in stored:
            stored.append(v.get("name"))
    status["storedVersions"] = stored
    status["acceptedNames"] = dict((new.get("spec") or {}).get("names") or {})
    return {**new, "status": status}
