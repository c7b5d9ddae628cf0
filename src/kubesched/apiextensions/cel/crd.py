"""The estimated cost of a CRD's rules, checked when the CRD is written
(``apiextensions/validation/validation.go``): each rule's cost times how often it can run
(``maxCardinality``) against the per-rule limit, and all of them against the CRD's, with
upstream's messages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubesched.apiextensions.cel.cost import estimated_cost
from kubesched.apiextensions.cel.decls import decl_type
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


_COSTED = (("rule", "estimated rule cost"), ("messageExpression", "estimated messageExpression cost"))
_CONTRIBUTED = "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"


def cost_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """The rules whose estimated cost exceeds the per-rule limit, then, if all of them together
    exceed the CRD's, the most expensive (up to four, each 1% of the limit or more) and the total."""
    errors: list[FieldError] = []
    total = 0
    expensive: list[tuple[int, str]] = []
    for node, at, cardinality, root in _nodes(schema, path, 1, True):
        rules = node.get("x-kubernetes-validations")
        if not rules:
            continue
        decl = decl_type(node, root)
        if decl is None:
            continue
        times = cardinality if cardinality is not None else MAX_REQUEST_SIZE_BYTES // (decl.min_size + 1)
        for i, rule in enumerate(rules):
            for key, what in _COSTED:
                text = rule.get(key) if isinstance(rule, dict) else None
                if not isinstance(text, str) or not text:
                    continue
                try:
                    base = estimated_cost(text, decl)
                except Exception:
                    continue  # not parsed: reported as a compilation failure
                cost = 0 if base == 0 else min(base * times, MAX_UINT64)
                where = f"{at}.x-kubernetes-validations[{i}].{key}"
                if cost > PER_EXPRESSION_LIMIT:
                    message = cost_message(what, cost, PER_EXPRESSION_LIMIT)
                    errors.append(FieldError(where, "FieldValueForbidden", f"Forbidden: {message}"))
                total = min(total + cost, MAX_UINT64)
                if cost >= CRD_LIMIT // 100:
                    expensive.append((cost, where))
    if total > CRD_LIMIT:
        expensive.sort(key=lambda x: -x[0])
        for _, where in expensive[:4]:
            errors.append(FieldError(where, "FieldValueForbidden", f"Forbidden: {_CONTRIBUTED}"))
        what = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema"
        errors.append(FieldError(path, "FieldValueForbidden", f"Forbidden: {cost_message(what, total, CRD_LIMIT)}"))
    return errors
