"""Label selectors in their string form (apimachinery ``labels.Parse``): ``=``, ``==``, ``!=``,
``in``, ``notin``, ``key``, ``!key``, terms ANDed, as ``?labelSelector=`` and ``kubectl -l`` write
them; a malformed one is a BadRequest naming the problem."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubesched.api.errors import BadRequest
from kubesched.api.selectors import Requirement
from kubesched.api.validation import label_key_errors, label_value_errors

# ``=``/``==`` is In with one value, ``!=`` NotIn, ``key`` Exists, ``!key`` DoesNotExist: the
# meta/v1 requirement the rest of kubesched already evaluates (``api.selectors.Requirement``)
LabelMatcher = tuple[Requirement, ...]
_OPERATORS = {"in": "In", "notin": "NotIn"}


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _label_error(why: str) -> BadRequest:
    return BadRequest(f"unable to parse requirement: {why}", details={"causes": [{"field": "labelSelector"}]})


def _check_key(key: str) -> str:
    errs = label_key_errors(key)
    if errs:
        raise _label_error(f"invalid label key {key!r}: {errs[0]}")
    return key


def _check_value(value: str) -> str:
    errs = label_value_errors(value)
    if errs:
        raise _label_error(f"invalid label value: {value!r}: {errs[0]}")
    return value


def _requirement(term: str) -> Requirement:
    m = re.match(r"^(\S+?)\s+(in|notin)\s*\((.*)\)$", term)
    if m:
        inner = m.group(3)
        values = tuple(_check_value(v.strip()) for v in inner.split(",")) if inner.strip() else ()
        if not values:
            raise _label_error(f"for 'in', 'notin' operators, values set can't be empty ({term!r})")
        return Requirement(_check_key(m.group(1)), _OPERATORS[m.group(2)], values)
    for symbol, op in (("!=", "NotIn"), ("==", "In"), ("=", "In")):
        if symbol in term:
            key, _, value = term.partition(symbol)
            if value.startswith("="):
                raise _label_error(f"found '=', expected: identifier ({term!r})")
            return Requirement(_check_key(key.strip()), op, (_check_value(value.strip()),))
    if term.startswith("!"):
        return Requirement(_check_key(term[1:].strip()), "DoesNotExist", ())
    if re.search(r"[\s()<>]", term):
        raise _label_error(f"found {term!r}, expected: '=', '!=', '==', 'in', notin'")
    return Requirement(_check_key(term), "Exists", ())


def parse_label_selector(text: str | None) -> LabelMatcher:
    """Parse a ``labelSelector`` query value; raises BadRequest (400) naming the problem."""
    if not text or not text.strip():
        return ()
    out = []
    for raw in _split_top(text):
        term = raw.strip()
        if not term:
            raise _label_error("found '', expected: !, identifier, or 'end of string'")
        out.append(_requirement(term))
    return tuple(out)


def labels_match(matcher: LabelMatcher, obj: Mapping[str, Any]) -> bool:
    if not matcher:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in matcher)
