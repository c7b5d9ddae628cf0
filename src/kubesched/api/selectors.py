"""Label selectors, node selector requirements, taints and tolerations (core/v1 and meta/v1 helpers)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.errors import InputError

NODE_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``NodeSelectorRequirement`` or ``LabelSelectorRequirement``."""

    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Evaluate against one label map (used off the hot path: PDBs, queueing hints, tests)."""
        op = self.operator
        present = self.key in labels
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if not present:
            return False
        try:
            have, want = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed together; ``fields`` only supports ``metadata.name``."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self.expressions and not self.fields:
            return False
        return all(r.matches(labels) for r in self.expressions) and all(
            r.matches({"metadata.name": node_name}) for r in self.fields
        )


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """meta/v1 ``LabelSelector``; an empty selector matches everything."""

    match_labels: tuple[tuple[str, str], ...]
    expressions: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.expressions
        )

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.expressions


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """``v1.Toleration.ToleratesTaint``: empty effect/key match all, Exists ignores value."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


def tolerates_any(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def _requirement(raw: Any, field: str, ops: tuple[str, ...]) -> Requirement:
    if not isinstance(raw, (dict, Mapping)):
        raise InputError("expected an object", field=field)
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise InputError("key is required", field=f"{field}.key")
    op = raw.get("operator")
    if op not in ops:
        raise InputError(f"Unsupported value: {op!r}: supported values: {', '.join(ops)}", field=f"{field}.operator")
    values = raw.get("values") or []
    if not isinstance(values, list):
        raise InputError("expected a list", field=f"{field}.values")
    values = tuple(str(v) for v in values)
    if op in ("In", "NotIn") and not values:
        raise InputError("must be specified when `operator` is 'In' or 'NotIn'", field=f"{field}.values")
    if op in ("Exists", "DoesNotExist") and values:
        raise InputError("may not be specified when `operator` is 'Exists' or 'DoesNotExist'", field=f"{field}.values")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise InputError("must be specified single value when `operator` is 'Lt' or 'Gt'", field=f"{field}.values")
        try:
            int(values[0])
        except ValueError:
            raise InputError(f"invalid integer {values[0]!r}", field=f"{field}.values[0]") from None
    return Requirement(key, op, values)


def parse_node_selector_term(raw: Any, field: str) -> NodeSelectorTerm:
    if not isinstance(raw, (dict, Mapping)):
        raise InputError("expected an object", field=field)
    exprs = tuple(
        _requirement(r, f"{field}.matchExpressions[{i}]", NODE_SELECTOR_OPS)
        for i, r in enumerate(raw.get("matchExpressions") or [])
    )
    fields = []
    for i, r in enumerate(raw.get("matchFields") or []):
        req = _requirement(r, f"{field}.matchFields[{i}]", ("In", "NotIn"))
        if req.key != "metadata.name":
            raise InputError(
                f"Invalid value: {req.key!r}: not a supported field selector key", field=f"{field}.matchFields[{i}].key"
            )
        fields.append(req)
    return NodeSelectorTerm(exprs, tuple(fields))


def parse_label_selector(raw: Any, field: str) -> LabelSelector | None:
    """Parse a LabelSelector; ``None`` (absent) is distinct from ``{}`` (matches everything)."""
    if raw is None:
        return None
    if not isinstance(raw, (dict, Mapping)):
        raise InputError("expected an object", field=field)
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, (dict, Mapping)):
        raise InputError("expected a map", field=f"{field}.matchLabels")
    exprs = tuple(
        _requirement(r, f"{field}.matchExpressions[{i}]", LABEL_SELECTOR_OPS)
        for i, r in enumerate(raw.get("matchExpressions") or [])
    )
    return LabelSelector(tuple(sorted((str(k), str(v)) for k, v in labels.items())), exprs)


def parse_taints(raw: Any, field: str) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(raw or []):
        if not isinstance(t, (dict, Mapping)) or not t.get("key"):
            raise InputError("key is required", field=f"{field}[{i}].key")
        effect = t.get("effect")
        if effect not in TAINT_EFFECTS:
            raise InputError(
                f"Unsupported value: {effect!r}: supported values: {', '.join(TAINT_EFFECTS)}",
                field=f"{field}[{i}].effect",
            )
        out.append(Taint(str(t["key"]), str(t.get("value") or ""), effect))
    return tuple(out)


# tolerations seen, by their four fields: most pods carry the same few (the admission's
# not-ready and unreachable ones), and a frozen dataclass costs several times the lookup to build
_TOLERATIONS: dict[tuple[str, str, str, str], Toleration] = {}
_TOLERATIONS_KEPT = 4096


def parse_tolerations(raw: Any, field: str) -> tuple[Toleration, ...]:
    out = []
    for i, t in enumerate(raw or []):
        if not isinstance(t, (dict, Mapping)):
            raise InputError("expected an object", field=f"{field}[{i}]")
        op = t.get("operator") or "Equal"
        if op not in ("Equal", "Exists"):
            raise InputError(
                f"Unsupported value: {op!r}: supported values: Equal, Exists", field=f"{field}[{i}].operator"
            )
        fields = (str(t.get("key") or ""), op, str(t.get("value") or ""), str(t.get("effect") or ""))
        got = _TOLERATIONS.get(fields)
        if got is None:
            got = Toleration(*fields)
            if len(_TOLERATIONS) < _TOLERATIONS_KEPT:
                _TOLERATIONS[fields] = got
        out.append(got)
    return tuple(out)


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``: a meta/v1 LabelSelector in label-selector syntax (the
    Scale subresource's status.selector)."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key = expr.get("operator"), expr.get("key")
        vals = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({vals})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({vals})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)
