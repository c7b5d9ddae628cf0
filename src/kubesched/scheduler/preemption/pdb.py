"""PodDisruptionBudgets as preemption reads them (``filterPodsWithPDBViolation`` in
``framework/preemption/preemption.go``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.api.selectors import LabelSelector, parse_label_selector
from kubesched.errors import InputError


@dataclass(frozen=True, slots=True)
class PDBInfo:
    namespace: str
    name: str
    selector: LabelSelector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    def matches(self, pod: PodInfo) -> bool:
        """Same namespace and a non-empty selector matching the pod (a nil or empty selector
        matches nothing here, unlike elsewhere)."""
        if pod.namespace != self.namespace or self.selector is None or self.selector.empty:
            return False
        return self.selector.matches(pod.labels)


def pdb_infos(objs: Sequence[dict[str, Any]]) -> list[PDBInfo]:
    out = []
    for obj in objs:
        meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        try:
            selector = parse_label_selector(spec.get("selector"), "spec.selector")
        except InputError:
            selector = None  # an invalid selector matches nothing
        out.append(
            PDBInfo(
                meta.get("namespace") or "default",
                meta.get("name") or "",
                selector,
                int(status.get("disruptionsAllowed") or 0),
                frozenset(status.get("disruptedPods") or {}),
            )
        )
    return out


def takes_below_zero(pod: PodInfo, pdbs: Sequence[PDBInfo], allowed: list[int], *, first: bool = False) -> bool:
    """Count ``pod``'s eviction against every budget matching it (``allowed``: what each has
    left); whether one went below zero. ``first``: stop at that budget (a pod group victim's
    ``podIsViolating``). Pods already in a budget's disruptedPods don't count against it; pods
    without labels match nothing."""
    hit = False
    if pod.labels:
        for i, pdb in enumerate(pdbs):
            if not pdb.matches(pod) or pod.name in pdb.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                hit = True
                if first:
                    break
    return hit


def violating(victims: Sequence[PodInfo], pdbs: Sequence[PDBInfo]) -> list[bool]:
    """For victims of one node in importance order: does evicting each one (and those before
    it) take some matching budget below zero?"""
    allowed = [p.disruptions_allowed for p in pdbs]
    return [takes_below_zero(pod, pdbs, allowed) for pod in victims]
