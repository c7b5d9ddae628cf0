"""Typed plugin args: a plugin declares ``Args``, a dataclass, and gets an instance of it built
from its ``pluginConfig`` entry (camelCase keys, defaults from the dataclass, types checked, unknown
keys refused, then ``Args.validate()`` if it has one), as upstream decodes each plugin's args type
from the configuration. Errors name the field; the framework adds the profile and plugin."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

from kubesched.errors import InputError


def json_name(field: dataclasses.Field[Any]) -> str:
    """``field.metadata["json"]``, or the field name in camelCase."""
    if "json" in field.metadata:
        return str(field.metadata["json"])
    head, *rest = field.name.split("_")
    return head + "".join(part.title() for part in rest)


def _check(value: Any, typ: Any, where: str) -> Any:
    origin = typing.get_origin(typ)
    if typ is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(typ)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _check(value, option, where)
            except InputError:
                continue
        raise InputError(f"Invalid value: {value!r}: expected {typ}", field=where)
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise InputError(f"Invalid value: {value!r}: expected a list", field=where)
        (inner, *_) = typing.get_args(typ) or (Any,)
        return [_check(v, inner, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise InputError(f"Invalid value: {value!r}: expected an object", field=where)
        _, inner = typing.get_args(typ) or (str, Any)
        return {str(k): _check(v, inner, f"{where}.{k}") for k, v in value.items()}
    if typ is bool:
        if not isinstance(value, bool):
            raise InputError(f"Invalid value: {value!r}: expected true or false", field=where)
        return value
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"Invalid value: {value!r}: expected an integer", field=where)
        return value
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"Invalid value: {value!r}: expected a number", field=where)
        return float(value)
    if typ is str:
        if not isinstance(value, str):
            raise InputError(f"Invalid value: {value!r}: expected a string", field=where)
        return value
    if isinstance(typ, type) and dataclasses.is_dataclass(typ):
        return decode_args(typ, value, prefix=f"{where}.")
    return value


def decode_args(cls: type[Any], raw: Any, *, prefix: str = "") -> Any:
    """An instance of the dataclass ``cls`` from a pluginConfig ``args`` object (or None)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", field=prefix.rstrip(".") or None)
    hints = typing.get_type_hints(cls)
    fields = {json_name(f): f for f in dataclasses.fields(cls) if f.init}
    for key in raw:
        if key not in fields and key not in ("apiVersion", "kind"):
            raise InputError(f'unknown field "{key}"', field=f"{prefix}{key}")
    values: dict[str, Any] = {}
    for key, f in fields.items():
        if key in raw:
            values[f.name] = _check(raw[key], hints.get(f.name, Any), f"{prefix}{key}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise InputError("Required value", field=f"{prefix}{key}")
    args = cls(**values)
    validate = getattr(args, "validate", None)
    if callable(validate):
        validate()
    return args
