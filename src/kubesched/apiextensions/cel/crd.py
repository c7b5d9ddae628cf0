"""A CRD's rules checked when the CRD is written (``apiextensions/validation/validation.go`` and
``schema/cel/compilation.go``): each rule and messageExpression type-checked as cel-go checks it
(``checker.py``), its estimated cost times how often it can run (``maxCardinality``) against the
per-rule limit, and all of them against the CRD's, with upstream's messages."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import orjson

from kubesched.apiextensions.cel import checker
from kubesched.apiextensions.cel.cost import estimated_cost
from kubesched.apiextensions.cel.decls import Decl, decl_type
from kubesched.apiextensions.cel.limits import CRD_LIMIT, MAX_REQUEST_SIZE_BYTES, MAX_UINT64, PER_EXPRESSION_LIMIT
from kubesched.apiextensions.structural import FieldError


def cost_message(what: str, cost: int, limit: int) -> str:
    """``getCostErrorMessage``."""
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return (
        f"{what} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, "
        "maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )


def _nodes(schema: dict[str, Any], path: str, cardinality: int | None, root: bool) -> Iterator[Any]:
    """Each schema node with its path, how many times it can occur (None: unbounded) and whether
    it is a resource's root (``CELSchemaContext.childContext``)."""
    yield schema, path, cardinality, root
    if cardinality is not None:
        t = schema.get("type")
        if t == "array":
            mi = schema.get("maxItems")
            cardinality = cardinality * max(mi, 0) if isinstance(mi, int) else None
        elif t == "object" and isinstance(schema.get("additionalProperties"), dict):
            mp = schema.get("maxProperties")
            cardinality = cardinality * max(mp, 0) if isinstance(mp, int) else None
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict):
            yield from _nodes(sub, f"{path}.properties[{name}]", cardinality, _embedded(sub))
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _nodes(items, f"{path}.items", cardinality, _embedded(items))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _nodes(extra, f"{path}.additionalProperties", cardinality, _embedded(extra))


def _embedded(schema: dict[str, Any]) -> bool:
    return bool(schema.get("x-kubernetes-embedded-resource"))


_CONTRIBUTED = "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"


def go_rule(rule: dict[str, Any]) -> str:
    """A ValidationRule as ``field.Invalid`` prints the internal Go struct (JSON, HTML-escaped)."""
    shown = {
        "Rule": rule.get("rule", ""),
        "Message": rule.get("message", ""),
        "MessageExpression": rule.get("messageExpression", ""),
        "Reason": rule.get("reason"),
        "FieldPath": rule.get("fieldPath", ""),
        "OptionalOldSelf": rule.get("optionalOldSelf"),
    }
    text = json.dumps(shown, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _compiled(text: str, decl: Decl, wants: str) -> str | None:
    """Why cel-go's checker refuses ``text`` (``compilation failed: …``, or that it does not evaluate
    to ``wants``), None when it passes or does not parse (a parse failure is reported on its own)."""
    try:
        found, out = checker.problems(text, decl)
    except Exception:
        return None
    if found:
        return f"compilation failed: {found}"
    if out.name not in (wants, "dyn", "error"):
        return "cel expression must evaluate to a bool" if wants == "bool" else "must evaluate to a string"
    return None


# where validation.go reports a CRD's rules (whichever version's schema holds them)
SCHEMA_PATH = "spec.validation.openAPIV3Schema"
_CHECKED_SIZE = 64
_checked: dict[tuple[bytes, str], tuple[FieldError, ...]] = {}  # the last schemas checked, oldest first
_checked_lock = threading.Lock()


def cel_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """``_cel_errors``, kept for the last schemas checked: a CRD write's rules are checked off the
    event loop first (``off_loop``), and the write's own validation finds the answer here."""
    try:
        key = (orjson.dumps(schema, option=orjson.OPT_SORT_KEYS), path)
    except (TypeError, orjson.JSONEncodeError):  # (an integer past 64 bits): not kept
        return _cel_errors(schema, path)
    with _checked_lock:
        hit = _checked.get(key)
    if hit is not None:
        return list(hit)
    found = _cel_errors(schema, path)
    with _checked_lock:
        _checked[key] = tuple(found)
        while len(_checked) > _CHECKED_SIZE:
            del _checked[next(iter(_checked))]
    return found


def _cel_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """``compileRule`` and the cost checks of ``validation.go``, rule by rule: a rule's estimated cost
    over the per-rule limit, a rule cel-go's checker refuses, then its messageExpression refused or
    over the limit; then, if all of them together exceed the CRD's limit, the most expensive (up to
    four, each 1% of the limit or more) and the total."""
    errors: list[FieldError] = []
    total = 0
    expensive: list[tuple[int, str]] = []

    def costed(text: str, what: str, where: str, times: int, decl: Decl) -> None:
        nonlocal total
        try:
            base = estimated_cost(text, decl)
        except Exception:
            return  # not parsed: reported as a compilation failure
        cost = 0 if base == 0 else min(base * times, MAX_UINT64)
        if cost > PER_EXPRESSION_LIMIT:
            errors.append(
                FieldError(where, "FieldValueForbidden", f"Forbidden: {cost_message(what, cost, PER_EXPRESSION_LIMIT)}")
            )
        total = min(total + cost, MAX_UINT64)
        if cost >= CRD_LIMIT // 100:
            expensive.append((cost, where))

    for node, at, cardinality, root in _nodes(schema, path, 1, True):
        rules = node.get("x-kubernetes-validations")
        if not rules:
            continue
        decl = decl_type(node, root)
        if decl is None:
            continue
        times = cardinality if cardinality is not None else MAX_REQUEST_SIZE_BYTES // (decl.min_size + 1)
        for i, rule in enumerate(rules):
            if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str) or not rule["rule"].strip():
                continue
            where = f"{at}.x-kubernetes-validations[{i}]"
            refused = _compiled(rule["rule"], decl, "bool")
            if refused is not None:
                errors.append(
                    FieldError(f"{where}.rule", "FieldValueInvalid", f"Invalid value: {go_rule(rule)}: {refused}")
                )
                continue
            costed(rule["rule"], "estimated rule cost", f"{where}.rule", times, decl)
            message = rule.get("messageExpression")
            if not isinstance(message, str) or not message:
                continue
            refused = _compiled(message, decl, "string")
            if refused is not None:
                shown = f"Invalid value: {go_rule(rule)}: messageExpression {refused}"
                errors.append(FieldError(f"{where}.messageExpression", "FieldValueInvalid", shown))
                continue
            costed(message, "estimated messageExpression cost", f"{where}.messageExpression", times, decl)
    if total > CRD_LIMIT:
        expensive.sort(key=lambda x: -x[0])
        for _, where in expensive[:4]:
            errors.append(FieldError(where, "FieldValueForbidden", f"Forbidden: {_CONTRIBUTED}"))
        what = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema"
        errors.append(FieldError(path, "FieldValueForbidden", f"Forbidden: {cost_message(what, total, CRD_LIMIT)}"))
    return errors
