"""A custom resource's structural schema at work (apiextensions-apiserver's ``pkg/apiserver/schema``
and ``pkg/apiserver/validation``): pruning of fields the schema does not declare, dropping nulls
it does not allow, defaulting, and the OpenAPI validation whose failures kube-apiserver turns
into field errors (kube-openapi's ``validation/errors`` wording, converted as
``kubeOpenAPIResultToFieldErrors`` does)."""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import json
import math
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from kubesched.apiextensions import patterns

Schema = dict[str, Any]

# the fields every object keeps whatever its schema says (``schema/objectmeta`` handles metadata)
ROOT_FIELDS = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True, slots=True)
class FieldError:
    """One ``field.Error``: the path, its cause reason and its body (``ErrorBody``)."""

    field: str
    reason: str
    message: str


def go_shown(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: strings quoted, numbers and booleans plain,
    anything else as JSON."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return json.dumps(value, separators=(",", ":"))


_OPENAPI_TYPES: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    str: "string",
    list: "array",
    dict: "object",
}


def type_name(value: Any) -> str:
    """The OpenAPI type a decoded JSON value has: an integral float within ±2^53 is an integer, as
    kube-openapi's ``IsFloat64AJSONInteger`` has it (an integer past int64 decodes as a float)."""
    if isinstance(value, float):
        return "integer" if value.is_integer() and abs(value) <= 2**53 else "number"
    return _OPENAPI_TYPES.get(type(value), "object")


def field_schema(schema: Schema, key: str) -> Schema | None:
    """The schema of an object's field: its property's, else additionalProperties' (a map)."""
    props = schema.get("properties")
    sub = props.get(key) if isinstance(props, dict) else None
    if sub is None and isinstance(schema.get("additionalProperties"), dict):
        sub = schema["additionalProperties"]
    return sub if isinstance(sub, dict) else None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# -- pruning and defaulting -----------------------------------------------------------------------


def prune(schema: Schema, obj: dict[str, Any]) -> list[str]:
    """Drop, in place, every field the schema does not declare (but where it preserves unknown
    fields), and nulls it does not allow; returns the dropped paths (``unknown field "spec.x"``)."""
    dropped: list[str] = []
    _prune_object(schema, obj, "", dropped, root=True)
    return sorted(dropped)


def _prune_object(schema: Schema, obj: dict[str, Any], path: str, dropped: list[str], *, root: bool = False) -> None:
    props: dict[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for key in list(obj):
        if (root or embedded) and key in ROOT_FIELDS and key not in props:
            continue
        sub = props.get(key)
        if sub is None and isinstance(extra, dict):
            sub = extra
        if sub is None:
            if not preserve and extra is not True:
                del obj[key]
                dropped.append(_join(path, key))
            continue
        if obj[key] is None and not sub.get("nullable"):
            del obj[key]  # a null the schema does not allow is dropped before defaulting
            continue
        _prune_value(sub, obj[key], _join(path, key), dropped)


def _prune_value(schema: Schema, value: Any, path: str, dropped: list[str]) -> None:
    if isinstance(value, dict):
        _prune_object(schema, value, path, dropped)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        for i, item in enumerate(value):
            _prune_value(items, item, f"{path}[{i}]", dropped)


def apply_defaults(schema: Schema, obj: Any) -> None:
    """Set, in place, each absent property that has a default (``structuraldefaulting.Default``),
    in objects, in array items and in map values, outermost first."""
    if isinstance(obj, dict):
        props: dict[str, Schema] = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in obj and "default" in sub:
                obj[key] = copy.deepcopy(sub["default"])
        for key, value in obj.items():
            inner = field_schema(schema, key)
            if inner is not None:
                apply_defaults(inner, value)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            apply_defaults(schema["items"], item)


# -- validation -----------------------------------------------------------------------------------


def validate(schema: Schema, obj: dict[str, Any]) -> list[FieldError]:
    """The OpenAPI validation of a whole object against its version's schema; metadata is
    checked elsewhere (``ValidateObjectMeta``)."""
    errors: list[FieldError] = []
    trimmed = {k: v for k, v in obj.items() if k != "metadata"}
    stripped = {**schema, "properties": {k: v for k, v in (schema.get("properties") or {}).items() if k != "metadata"}}
    _check(stripped, trimmed, "", errors)
    _lists(stripped, trimmed, "", errors)
    return errors


def _lists(schema: Schema, value: Any, path: str, errors: list[FieldError]) -> None:
    """``listtype.ValidateListSetsAndMaps``: a ``set`` list holds no value twice, a ``map`` list no
    two items with the same keys; each repeated value is reported once, at its first repeat."""
    if isinstance(value, dict):
        for key, item in value.items():
            sub = field_schema(schema, key)
            if sub is not None:
                _lists(sub, item, _join(path, key), errors)
        return
    if not isinstance(value, list):
        return
    kind = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys") or []
    seen: set[str] = set()
    reported: set[str] = set()
    for i, item in enumerate(value):
        if kind == "set":
            key, shown = _canonical(item), go_shown(item)
        elif kind == "map" and isinstance(item, dict):
            fields = {k: item[k] for k in keys if k in item}
            key, shown = _canonical(fields), json.dumps(fields, separators=(",", ":"))
        else:
            break
        if key in seen and key not in reported:
            reported.add(key)
            errors.append(FieldError(f"{path}[{i}]", "FieldValueDuplicate", f"Duplicate value: {shown}"))
        seen.add(key)
    if isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _lists(schema["items"], item, f"{path}[{i}]", errors)


def validate_value(schema: Schema, value: Any) -> list[FieldError]:
    """The validation of one value (a schema's default) at the root: paths start empty."""
    errors: list[FieldError] = []
    _check(schema, value, "", errors)
    return errors


def _fail(errors: list[FieldError], path: str, reason: str, body: str) -> None:
    errors.append(FieldError(path or "<nil>", reason, body))


def _invalid(errors: list[FieldError], path: str, value: Any, detail: str) -> None:
    _fail(errors, path, "FieldValueInvalid", f"Invalid value: {go_shown(value)}: {detail}")


def _type_error(errors: list[FieldError], path: str, shown: Any, detail: str) -> None:
    _fail(errors, path, "FieldValueTypeInvalid", f"Invalid value: {go_shown(shown)}: {detail}")


def _types_allowed(schema: Schema) -> list[str] | None:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    t = schema.get("type")
    return [t] if isinstance(t, str) and t else None


def _type_ok(allowed: list[str], actual: str, value: Any) -> bool:
    if actual in allowed:
        return True
    return actual == "integer" and "number" in allowed


def _check(schema: Schema, value: Any, path: str, errors: list[FieldError]) -> None:
    if value is None and (schema.get("nullable") or _types_allowed(schema) is None):
        return
    allowed = _types_allowed(schema)
    actual = type_name(value)
    if allowed is not None and not _type_ok(allowed, actual, value):
        shown = actual
        _type_error(errors, path, shown, f"{path} in body must be of type {','.join(allowed)}: {go_shown(shown)}")
        if allowed == ["integer"] and actual == "number":  # the format check runs too
            _invalid(errors, "", "", f"Checked value must be of type integer (default format) in {path}")
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(go_shown(v) for v in schema["enum"])
        _fail(
            errors,
            path,
            "FieldValueNotSupported",
            f"Unsupported value: {go_shown(value)}: supported values: {supported}",
        )
    if isinstance(value, str):
        _check_string(schema, value, path, errors)
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        _check_number(schema, value, path, errors)
    elif isinstance(value, list):
        _check_array(schema, value, path, errors)
    elif isinstance(value, dict):
        _check_object(schema, value, path, errors)


def _check_string(schema: Schema, value: str, path: str, errors: list[FieldError]) -> None:
    max_length = schema.get("maxLength")
    if isinstance(max_length, int) and len(value) > max_length:
        _fail(errors, path, "FieldValueTooLong", f"Too long: may not be more than {max_length} bytes")
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and len(value) < min_length:
        _invalid(errors, path, value, f"{path} in body should be at least {min_length} chars long")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = patterns.search(pattern, value)
        except patterns.PatternError:
            matched = True  # the CRD's validation refuses such a pattern; nothing to check here
        if not matched:
            _invalid(errors, path, value, f"{path} in body should match '{pattern}'")
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMATS and not FORMATS[fmt](value):
        _type_error(errors, path, value, f"{path} in body must be of type {fmt}: {go_shown(value)}")


def _number(v: Any) -> str:
    return go_shown(v)


def _check_number(schema: Schema, value: float, path: str, errors: list[FieldError]) -> None:
    maximum = schema.get("maximum")
    if isinstance(maximum, int | float) and not isinstance(maximum, bool):
        if schema.get("exclusiveMaximum") and value >= maximum:
            _invalid(errors, path, value, f"{path} in body should be less than {_number(maximum)}")
        elif value > maximum:
            _invalid(errors, path, value, f"{path} in body should be less than or equal to {_number(maximum)}")
    minimum = schema.get("minimum")
    if isinstance(minimum, int | float) and not isinstance(minimum, bool):
        if schema.get("exclusiveMinimum") and value <= minimum:
            _invalid(errors, path, value, f"{path} in body should be greater than {_number(minimum)}")
        elif value < minimum:
            _invalid(errors, path, value, f"{path} in body should be greater than or equal to {_number(minimum)}")
    factor = schema.get("multipleOf")
    if isinstance(factor, int | float) and factor > 0:
        q = value / factor
        if not math.isclose(q, round(q), rel_tol=0, abs_tol=1e-9):
            _invalid(errors, path, value, f"{path} in body should be a multiple of {_number(factor)}")


def _check_array(schema: Schema, value: list[Any], path: str, errors: list[FieldError]) -> None:
    max_items = schema.get("maxItems")
    if isinstance(max_items, int) and len(value) > max_items:
        _fail(errors, path, "FieldValueTooMany", f"Too many: {len(value)}: must have at most {max_items} items")
    min_items = schema.get("minItems")
    if isinstance(min_items, int) and len(value) < min_items:
        _invalid(errors, path, len(value), f"{path} in body should have at least {min_items} items")
    if schema.get("uniqueItems") and len({_canonical(v) for v in value}) < len(value):
        _invalid(errors, path, value, f"{path} in body shouldn't contain duplicates")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _check(items, item, f"{path}[{i}]", errors)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _check_object(schema: Schema, value: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    for name in schema.get("required") or ():
        if name not in value:
            _fail(errors, _join(path, name), "FieldValueRequired", "Required value")
    max_props = schema.get("maxProperties")
    if isinstance(max_props, int) and len(value) > max_props:
        _fail(errors, path, "FieldValueTooMany", f"Too many: {len(value)}: must have at most {max_props} items")
    min_props = schema.get("minProperties")
    if isinstance(min_props, int) and len(value) < min_props:
        _invalid(errors, path, len(value), f"{path} in body should have at least {min_props} properties")
    for key, item in value.items():
        sub = field_schema(schema, key)
        if sub is not None:
            _check(sub, item, _join(path, key), errors)


# -- formats (kube-openapi's ``strfmt`` registry as apiextensions allows it) -----------------------


def _parses(fn: Callable[[str], Any]) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            fn(value)
        except (ValueError, TypeError, binascii.Error):
            return False
        return True

    return check


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DURATION = re.compile(r"^(-?\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d|w))+$")
_HOSTNAME = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")


def _date_time(value: str) -> bool:
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _date_time,
    "date": _parses(date.fromisoformat),
    "byte": _parses(lambda v: base64.b64decode(v, validate=True)),
    "uuid": _parses(uuid.UUID),
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
    "cidr": _parses(lambda v: ipaddress.ip_network(v, strict=False)),
    "mac": lambda v: bool(_MAC.match(v)),
    "hostname": lambda v: len(v) <= 255 and bool(_HOSTNAME.match(v)),
    "duration": lambda v: bool(_DURATION.match(v)),
}
