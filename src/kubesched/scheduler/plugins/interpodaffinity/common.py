"""Shared by InterPodAffinity's filtering and scoring: the plugin args, terms with their
namespaceSelector resolved, and counting pods that match a term per topology domain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.affinity import AffinityTerm
from kubesched.api.pod import PodInfo
from kubesched.errors import InputError
from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.podtable import PodTable


@dataclass(frozen=True, slots=True)
class AffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


def parse_args(raw: Any) -> AffinityArgs:
    """InterPodAffinityArgs with ``ValidateInterPodAffinityArgs``."""
    if raw is None:
        return AffinityArgs()
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", field="args")
    weight = raw.get("hardPodAffinityWeight", 1)
    if not isinstance(weight, int) or isinstance(weight, bool) or not 0 <= weight <= 100:
        raise InputError(f"Invalid value: {weight!r}: not in valid range [0-100]", field="hardPodAffinityWeight")
    ignore = raw.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise InputError(f"Invalid value: {ignore!r}: must be a boolean", field="ignorePreferredTermsOfExistingPods")
    return AffinityArgs(weight, ignore)


@dataclass(frozen=True, slots=True)
class Resolved:
    """An incoming pod's term with its namespaceSelector merged into the namespaces
    (``mergeAffinityTermNamespacesIfNotEmpty``); ``namespaces`` None means every namespace."""

    term: AffinityTerm
    namespaces: frozenset[str] | None

    def matches(self, pod: PodInfo) -> bool:
        in_ns = self.namespaces is None or pod.namespace in self.namespaces
        return in_ns and self.term.selector.matches(pod.labels)

    def pod_mask(self, table: PodTable) -> np.ndarray:
        """Slots of assigned pods this term selects."""
        mask = table.match_selector(self.term.selector) & (table.node_row >= 0)
        if self.namespaces is not None:
            mask &= table.in_namespaces(self.namespaces)
        return mask


def resolve(term: AffinityTerm, listers: Listers) -> Resolved:
    sel = term.namespace_selector
    if sel is not None and sel.empty:
        return Resolved(term, None)
    names = set(term.namespaces)
    if sel is not None:
        names.update(listers.namespaces_matching(sel))
    return Resolved(term, frozenset(names))


def matches_all(terms: tuple[Resolved, ...], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: false without terms."""
    return bool(terms) and all(t.matches(pod) for t in terms)


def per_node(table: PodTable, nodes: NodeTableView, slots_mask: np.ndarray) -> np.ndarray:
    """Number of selected pods on every row."""
    return np.bincount(table.node_row[slots_mask], minlength=nodes.n)[: nodes.n]


def pad_add(have: np.ndarray | None, more: np.ndarray) -> np.ndarray:
    """``have + more`` as int64, the shorter one padded with zeros."""
    more = more.astype(np.int64)
    if have is None:
        return more
    n = max(len(have), len(more))
    return np.pad(have, (0, n - len(have))) + np.pad(more, (0, n - len(more)))


def by_domain(nodes: NodeTableView, key: str, counts: np.ndarray) -> np.ndarray:
    """Sum per-row ``counts`` over the rows' values of ``key`` (array indexed by value code)."""
    codes = nodes.label_codes(key)
    size = len(nodes.label_values(key))
    if codes is None:
        return np.zeros(size, counts.dtype)
    has = codes >= 0
    return np.bincount(codes[has], weights=counts[has], minlength=size).astype(counts.dtype)


def lookup(nodes: NodeTableView, key: str, domains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(has the key, the domain's value) for every row of ``nodes``."""
    codes = nodes.label_codes(key)
    if codes is None:
        return np.zeros(nodes.n, bool), np.zeros(nodes.n, domains.dtype)
    has = codes >= 0
    if len(domains) == 0:
        return has, np.zeros(nodes.n, domains.dtype)
    safe = np.minimum(np.maximum(codes, 0), len(domains) - 1)
    values = np.where(has & (codes < len(domains)), domains[safe], 0)
    return has, values
