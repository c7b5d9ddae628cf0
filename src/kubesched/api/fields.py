"""Field selectors in their query-string form (apimachinery ``fields.ParseSelector``: ``=``,
``==``, ``!=``, terms ANDed, an empty value matching an empty field) over the fields each
resource's registry strategy makes selectable (``pkg/registry/core/*/strategy.go``
``ToSelectableFields``): for the API server's lists and watches, and for the informers that list
with one (the scheduler's pod informer)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.errors import BadRequest

__all__ = ["FieldMatcher", "fields_match", "parse_field_selector", "predicate"]

# -- field selectors ----------------------------------------------------------------------------
Getter = Callable[[Mapping[str, Any]], Any]


def _path(*keys: str) -> Getter:
    def get(obj: Mapping[str, Any]) -> Any:
        cur: Any = obj
        for k in keys:
            if not isinstance(cur, Mapping):
                return ""
            cur = cur.get(k)
        return cur

    return get


_META: dict[str, Getter] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

_INVOLVED = {
    f"involvedObject.{k}": _path("involvedObject", k)
    for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
}

# fields each stored kind lets a selector use, besides metadata.name and metadata.namespace
SELECTABLE: dict[str, dict[str, Getter]] = {
    "Pod": {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda o: "true" if (o.get("spec") or {}).get("hostNetwork") else "false",
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "Node": {"spec.unschedulable": lambda o: "true" if (o.get("spec") or {}).get("unschedulable") else "false"},
    "Namespace": {"status.phase": _path("status", "phase")},
    "Event": {
        **_INVOLVED,
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
}

# events.k8s.io/v1 names for the same fields (pkg/apis/events/v1 field label conversion)
EVENTS_V1_FIELDS = {
    **{f"regarding.{k.split('.', 1)[1]}": k for k in _INVOLVED},
    "deprecatedSource": "source",
    "reportingController": "reportingComponent",
}


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    equal: bool
    value: str
    get: Getter

    def matches(self, obj: Mapping[str, Any]) -> bool:
        have = self.get(obj)
        have = "" if have is None else str(have)
        return (have == self.value) == self.equal


FieldMatcher = tuple[FieldRequirement, ...]


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str | None, kind: str, *, events_v1: bool = False) -> FieldMatcher:
    """Parse a ``fieldSelector`` for a stored kind; an unsupported field is a 400 as upstream's
    ``field label not supported: <name>``."""
    if not text or not text.strip():
        return ()
    fields = {**_META, **SELECTABLE.get(kind, {})}
    out: list[FieldRequirement] = []
    for term in re.split(r"(?<!\\),", text):
        term = term.strip()
        if not term:
            continue
        m = re.match(r"^(.*?)(!=|==|=)(.*)$", term)
        if not m:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{term}'")
        name, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3))
        stored = EVENTS_V1_FIELDS.get(name, name) if events_v1 else name
        getter = fields.get(stored)
        if getter is None:
            raise BadRequest(f"field label not supported: {name}")
        out.append(FieldRequirement(stored, op != "!=", value, getter))
    return tuple(out)


def fields_match(matcher: FieldMatcher, obj: Mapping[str, Any]) -> bool:
    return all(r.matches(obj) for r in matcher)


def predicate(matcher: FieldMatcher) -> Callable[[Mapping[str, Any]], bool]:
    """``fields_match`` as one function that reads each field once: a watch applies it to every
    event of its kind (the scheduler's pod informer: two ``!=`` terms on ``status.phase`` become
    one set lookup)."""
    fields: dict[str, tuple[Getter, set[str], set[str]]] = {}
    for r in matcher:
        _, equal, unequal = fields.setdefault(r.field, (r.get, set(), set()))
        (equal if r.equal else unequal).add(r.value)
    checks = [(get, frozenset(equal), frozenset(unequal)) for get, equal, unequal in fields.values()]

    def matches(obj: Mapping[str, Any]) -> bool:
        for get, equal, unequal in checks:
            have = get(obj)
            have = "" if have is None else str(have)
            if have in unequal or (equal and (len(equal) > 1 or have not in equal)):
                return False
        return True

    return matches
