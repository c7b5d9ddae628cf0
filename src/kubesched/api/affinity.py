"""Pod (anti-)affinity terms and topology spread constraints, parsed once per pod.

``AffinityTerm`` is upstream's ``framework.AffinityTerm`` (``framework/types.go``): the label
selector with ``matchLabelKeys`` / ``mismatchLabelKeys`` merged in from the owning pod's labels,
the namespaces (the pod's own when neither ``namespaces`` nor ``namespaceSelector`` is given) and
the topology key. ``SpreadConstraint`` is podtopologyspread's ``topologySpreadConstraint``
(``common.go``) with its defaults filled in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.selectors import LabelSelector, Requirement, parse_label_selector
from kubesched.errors import InputError

HONOR, IGNORE = "Honor", "Ignore"
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"

# A nil labelSelector selects nothing (metav1.LabelSelectorAsSelector(nil) is labels.Nothing()).
NOTHING = LabelSelector((), (Requirement("", "In", ()),))


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    selector: LabelSelector
    namespaces: frozenset[str]
    # None: only ``namespaces``; empty selector: every namespace
    namespace_selector: LabelSelector | None
    topology_key: str

    def matches(self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str] | None) -> bool:
        """``AffinityTerm.Matches``: namespace listed or selected, and labels selected."""
        sel = self.namespace_selector
        in_ns = namespace in self.namespaces or (
            sel is not None and (sel.empty or (ns_labels is not None and sel.matches(ns_labels)))
        )
        return in_ns and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()

    @property
    def empty(self) -> bool:
        required = self.required_affinity or self.required_anti_affinity
        return not (required or self.preferred_affinity or self.preferred_anti_affinity)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def _merge_label_keys(
    selector: LabelSelector | None, match_keys: Any, mismatch_keys: Any, labels: Mapping[str, str], field: str
) -> LabelSelector | None:
    """matchLabelKeys add ``key In (value)``, mismatchLabelKeys ``key NotIn (value)``, for the
    keys the pod has (the apiserver's merge for affinity, the scheduler's for spreading)."""
    extra: list[Requirement] = []
    for name, keys, op in (("matchLabelKeys", match_keys, "In"), ("mismatchLabelKeys", mismatch_keys, "NotIn")):
        if keys is None:
            continue
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise InputError("expected a list of label keys", field=f"{field}.{name}")
        extra += [Requirement(k, op, (labels[k],)) for k in keys if k in labels]
    if not extra or selector is None:  # a nil selector selects nothing, with or without keys
        return selector
    return LabelSelector(selector.match_labels, selector.expressions + tuple(extra))


def parse_affinity_term(raw: Any, namespace: str, labels: Mapping[str, str], field: str) -> AffinityTerm:
    if not isinstance(raw, (dict, Mapping)):
        raise InputError("expected an object", field=field)
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InputError("Required value: can not be empty", field=f"{field}.topologyKey")
    selector = parse_label_selector(raw.get("labelSelector"), f"{field}.labelSelector")
    selector = _merge_label_keys(selector, raw.get("matchLabelKeys"), raw.get("mismatchLabelKeys"), labels, field)
    namespaces = raw.get("namespaces") or []
    if not isinstance(namespaces, list):
        raise InputError("expected a list", field=f"{field}.namespaces")
    ns_selector = parse_label_selector(raw.get("namespaceSelector"), f"{field}.namespaceSelector")
    names = frozenset(str(n) for n in namespaces)
    if not names and ns_selector is None:
        names = frozenset((namespace,))
    return AffinityTerm(selector if selector is not None else NOTHING, names, ns_selector, key)


def _weighted(raw: Any, namespace: str, labels: Mapping[str, str], field: str) -> WeightedAffinityTerm:
    if not isinstance(raw, (dict, Mapping)):
        raise InputError("expected an object", field=field)
    weight = raw.get("weight")
    if not isinstance(weight, int) or not 1 <= weight <= 100:
        raise InputError(f"Invalid value: {weight!r}: must be in the range 1-100", field=f"{field}.weight")
    term = parse_affinity_term(raw.get("podAffinityTerm"), namespace, labels, f"{field}.podAffinityTerm")
    return WeightedAffinityTerm(weight, term)


def parse_pod_affinity(affinity: Mapping[str, Any], namespace: str, labels: Mapping[str, str]) -> PodAffinity | None:
    """``spec.affinity.podAffinity`` / ``podAntiAffinity``; None when the pod has neither."""
    out: dict[str, tuple[Any, ...]] = {}
    for kind, prefix in (("podAffinity", "affinity"), ("podAntiAffinity", "anti_affinity")):
        section = affinity.get(kind)
        if section is None:
            continue
        if not isinstance(section, (dict, Mapping)):
            raise InputError("expected an object", field=f"spec.affinity.{kind}")
        base = f"spec.affinity.{kind}"
        req = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        pref = section.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        if not isinstance(req, list) or not isinstance(pref, list):
            raise InputError("expected a list", field=base)
        f_req = f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
        f_pref = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
        out[f"required_{prefix}"] = tuple(
            parse_affinity_term(t, namespace, labels, f"{f_req}[{i}]") for i, t in enumerate(req)
        )
        out[f"preferred_{prefix}"] = tuple(
            _weighted(t, namespace, labels, f"{f_pref}[{i}]") for i, t in enumerate(pref)
        )
    if not out:  # neither section: most pods (a dataclass built from keywords costs more)
        return None
    parsed = PodAffinity(**out)
    return None if parsed.empty else parsed


def parse_spread_constraints(raw: Any, labels: Mapping[str, str]) -> tuple[SpreadConstraint, ...]:
    """``spec.topologySpreadConstraints`` with matchLabelKeys merged into the selector."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("expected a list", field="spec.topologySpreadConstraints")
    out = []
    for i, c in enumerate(raw):
        field = f"spec.topologySpreadConstraints[{i}]"
        if not isinstance(c, (dict, Mapping)):
            raise InputError("expected an object", field=field)
        skew = c.get("maxSkew")
        if not isinstance(skew, int) or skew < 1:
            raise InputError(f"Invalid value: {skew!r}: must be greater than zero", field=f"{field}.maxSkew")
        key = c.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise InputError("Required value: can not be empty", field=f"{field}.topologyKey")
        when = c.get("whenUnsatisfiable")
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise InputError(
                f"Unsupported value: {when!r}: supported values: DoNotSchedule, ScheduleAnyway",
                field=f"{field}.whenUnsatisfiable",
            )
        min_domains = c.get("minDomains")
        if min_domains is None:
            min_domains = 1
        elif not isinstance(min_domains, int) or min_domains < 1:
            raise InputError(f"Invalid value: {min_domains!r}: must be greater than zero", field=f"{field}.minDomains")
        elif when != DO_NOT_SCHEDULE:
            raise InputError(
                "Invalid value: can only use minDomains if whenUnsatisfiable=DoNotSchedule", field=f"{field}.minDomains"
            )
        policies = []
        for name, default in (("nodeAffinityPolicy", HONOR), ("nodeTaintsPolicy", IGNORE)):
            value = c.get(name) or default
            if value not in (HONOR, IGNORE):
                raise InputError(
                    f"Unsupported value: {value!r}: supported values: Honor, Ignore", field=f"{field}.{name}"
                )
            policies.append(value)
        selector = parse_label_selector(c.get("labelSelector"), f"{field}.labelSelector")
        selector = _merge_label_keys(selector, c.get("matchLabelKeys"), None, labels, field)
        out.append(
            SpreadConstraint(skew, key, when, selector if selector is not None else NOTHING, min_domains, *policies)
        )
    return tuple(out)


def controller_ref(meta: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(apiVersion, kind, name) of the ownerReference with ``controller: true``."""
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, (dict, Mapping)) and ref.get("controller"):
            return str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""), str(ref.get("name") or "")
    return None
