"""kube-apiserver's answer to a PATCH that sets unknown fields under ``fieldValidation=Strict``
(``endpoints/handlers/patch.go``): a 422 Invalid on the field ``patch`` whose value is what the
server tried to decode: a strategic merge patch as Go prints the decoded map (``fmt``'s ``%v``), a
merge or JSON patch as the patched object's JSON (``encoding/json``: sorted keys, HTML escaped)."""

from __future__ import annotations

import json
from typing import Any

from kubesched.api.errors import Invalid


def go_value(value: Any) -> str:
    """``fmt.Sprintf("%v")`` of a JSON value decoded into ``interface{}``."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        # float64 with strconv's shortest 'g': an exponent from 1e+21 up, as Go prints
        f = float(value)
        if f.is_integer() and abs(f) < 1e21:
            return str(int(f))
        return repr(f).replace("e+0", "e+").replace("e-0", "e-")
    return str(value)


def go_json(value: Any, touched: Any = None) -> str:
    """The merge-patched object as json-patch's ``MergePatch`` writes it: the objects the patch
    reached re-marshalled (keys sorted), the rest kept as the stored object had them; compact,
    with <, > and & escaped."""
    if isinstance(value, dict) and isinstance(touched, dict):
        inner = ",".join(
            f"{json.dumps(k, ensure_ascii=False)}:{go_json(value[k], touched.get(k))}" for k in sorted(value)
        )
        return "{" + inner + "}"
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def strict_patch_error(value: str, reason: str) -> Invalid:
    """The 422 for a strict patch's unknown fields; ``value`` as Go formats it, ``reason`` the
    strict decoding error."""
    invalid = f"Invalid value: {json.dumps(value, ensure_ascii=False)}: {reason}"
    return Invalid(
        f' "" is invalid: patch: {invalid}',
        details={"causes": [{"reason": "FieldValueInvalid", "message": invalid, "field": "patch"}]},
    )
