"""Assigned pods as columns (node row, priority, start time, requests, namespace and labels): what
preemption and the inter-pod plugins ask of every node at once — "how much would removing the
pods below priority p free here?", "how many pods matching this selector run in each zone?" —
answered with one ``bincount`` instead of a walk over each node's pod list. Kept by the cache.

Pods with (anti-)affinity terms are also indexed by term (upstream's NodeInfo keeps
``PodsWithAffinity`` / ``PodsWithRequiredAntiAffinity``): pods of one workload share their terms,
so the work per scheduling cycle grows with the number of distinct terms, not of pods."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from kubesched.api.affinity import AffinityTerm
from kubesched.api.pod import PodInfo
from kubesched.api.selectors import LabelSelector, Requirement
from kubesched.clock import parse_rfc3339


def start_time(pod: PodInfo) -> float:
    """status.startTime in seconds; NaN for a pod not started yet (upstream then uses "now")."""
    raw = (pod.obj.get("status") or {}).get("startTime")
    if not raw:
        return math.nan
    try:
        return parse_rfc3339(raw)
    except ValueError:
        return math.nan


REQUIRED_AFFINITY, REQUIRED_ANTI, PREFERRED_AFFINITY, PREFERRED_ANTI = range(4)
# (kind, weight, term): one group of existing pods' terms
TermKey = tuple[int, int, AffinityTerm]


def term_keys(pod: PodInfo) -> list[TermKey]:
    a = pod.pod_affinity
    if a is None:
        return []
    keys: list[TermKey] = [(REQUIRED_AFFINITY, 1, t) for t in a.required_affinity]
    keys += [(REQUIRED_ANTI, 1, t) for t in a.required_anti_affinity]
    keys += [(PREFERRED_AFFINITY, w.weight, w.term) for w in a.preferred_affinity]
    keys += [(PREFERRED_ANTI, w.weight, w.term) for w in a.preferred_anti_affinity]
    return keys


class PodTable:
    """Slots of assigned (or assumed) pods; a removed pod's slot is reused."""

    def __init__(self, n_resources: int, capacity: int = 1024) -> None:
        self._cap = capacity
        self.pods: list[PodInfo | None] = [None] * capacity
        self.slot: dict[str, int] = {}
        self._free: list[int] = list(range(capacity - 1, -1, -1))
        self.node_row = np.full(capacity, -1, np.int64)
        self.priority = np.zeros(capacity, np.int64)
        self.start = np.zeros(capacity, np.float64)
        self.requests = np.zeros((n_resources, capacity), np.int64)
        self.nonzero = np.zeros((2, capacity), np.int64)
        self.has_ports = np.zeros(capacity, bool)
        self.terminating = np.zeros(capacity, bool)
        self.ns = np.full(capacity, -1, np.int32)
        self.ns_codes: dict[str, int] = {}
        self.label_cols: dict[str, np.ndarray] = {}  # key -> value code per slot, -1 absent
        self.label_vocab: dict[str, dict[str, int]] = {}
        self.term_groups: dict[TermKey, dict[int, None]] = {}  # slots holding each term, in order
        # bumped whenever a pod holding terms comes, goes or changes node row (term_groups and
        # group_per_row change): the template memo's guard for InterPodAffinity
        self.terms_epoch = 0
        self._group_arrays: dict[TermKey, np.ndarray] = {}

    def _grow(self) -> None:
        cap = self._cap * 2
        self.pods.extend([None] * self._cap)
        self._free.extend(range(cap - 1, self._cap - 1, -1))
        self.node_row = np.concatenate([self.node_row, np.full(self._cap, -1, np.int64)])
        self.priority = np.concatenate([self.priority, np.zeros(self._cap, np.int64)])
        self.start = np.concatenate([self.start, np.zeros(self._cap)])
        self.requests = np.hstack([self.requests, np.zeros_like(self.requests)])
        self.nonzero = np.hstack([self.nonzero, np.zeros_like(self.nonzero)])
        self.has_ports = np.concatenate([self.has_ports, np.zeros(self._cap, bool)])
        self.terminating = np.concatenate([self.terminating, np.zeros(self._cap, bool)])
        self.ns = np.concatenate([self.ns, np.full(self._cap, -1, np.int32)])
        self.label_cols = {k: np.concatenate([v, np.full(self._cap, -1, np.int32)]) for k, v in self.label_cols.items()}
        self._cap = cap

    def add(self, pod: PodInfo, row: int, res_index: dict[str, int]) -> None:
        if pod.uid in self.slot:
            self.remove(pod.uid)
        if not self._free:
            self._grow()
        if len(res_index) > self.requests.shape[0]:
            pad = np.zeros((len(res_index) - self.requests.shape[0], self._cap), np.int64)
            self.requests = np.vstack([self.requests, pad])
        i = self._free.pop()
        self.slot[pod.uid] = i
        self.pods[i] = pod
        self.node_row[i] = row
        self.priority[i] = pod.priority
        self.start[i] = start_time(pod)
        self.requests[:, i] = 0
        for name, qty in pod.requests.items():
            col = res_index.get(name)
            if col is not None:
                self.requests[col, i] = qty
        self.nonzero[0, i], self.nonzero[1, i] = pod.non_zero_cpu, pod.non_zero_memory
        self.has_ports[i] = bool(pod.host_ports)
        self.terminating[i] = pod.deleting
        self.ns[i] = self.ns_codes.setdefault(pod.namespace, len(self.ns_codes))
        for key, value in pod.labels.items():
            codes = self.label_cols.get(key)
            if codes is None:
                codes = self.label_cols[key] = np.full(self._cap, -1, np.int32)
            vocab = self.label_vocab.setdefault(key, {})
            codes[i] = vocab.setdefault(value, len(vocab))
        for term in term_keys(pod):
            self.term_groups.setdefault(term, {})[i] = None
            self._group_arrays.pop(term, None)
            self.terms_epoch += 1

    def replace(self, pod: PodInfo) -> None:
        """A newer version of a pod in the table whose counted fields did not change."""
        i = self.slot.get(pod.uid)
        if i is None:
            return
        self.pods[i] = pod
        self.start[i] = start_time(pod)

    def remove(self, uid: str) -> None:
        i = self.slot.pop(uid, None)
        if i is None:
            return
        pod = self.pods[i]
        assert pod is not None
        for key in pod.labels:
            self.label_cols[key][i] = -1
        for term in term_keys(pod):
            group = self.term_groups.get(term)
            if group is not None:
                group.pop(i, None)
                if not group:
                    del self.term_groups[term]
            self._group_arrays.pop(term, None)
            self.terms_epoch += 1
        self.ns[i] = -1
        self.pods[i] = None
        self.node_row[i] = -1
        self._free.append(i)

    def group_per_row(self, key: TermKey, n_rows: int) -> np.ndarray:
        """How many pods holding term ``key`` sit on each of ``n_rows`` node rows."""
        slots = self._group_arrays.get(key)
        if slots is None:
            slots = self._group_arrays[key] = np.fromiter(self.term_groups.get(key, ()), np.int64)
        rows = self.node_row[slots]
        return np.bincount(rows[rows >= 0], minlength=n_rows)[:n_rows]

    def has_terms(self, kind: int) -> bool:
        return any(k[0] == kind for k in self.term_groups)

    def node_removed(self, row: int) -> None:
        """Rows after ``row`` shift up by one, as in the NodeTable; the node's pods lose their row."""
        self.node_row[self.node_row == row] = -1
        self.node_row[self.node_row > row] -= 1
        self.terms_epoch += 1

    def node_added(self, row: int, uids: list[str]) -> None:
        self.terms_epoch += 1
        for uid in uids:
            i = self.slot.get(uid)
            if i is not None:
                self.node_row[i] = row

    def lower_priority(self, priority: int) -> np.ndarray:
        """Slots of pods on a known node with priority below ``priority``."""
        return np.flatnonzero((self.node_row >= 0) & (self.priority < priority))

    def any_lower_priority(self, priority: int) -> bool:
        """Whether any pod on a known node has priority below ``priority``: one reduction
        settles the usual case of no slot at all below it (a free slot's priority is stale)."""
        if not self._cap or int(np.minimum.reduce(self.priority)) >= priority:
            return False
        return bool(np.logical_or.reduce((self.node_row >= 0) & (self.priority < priority)))

    # -- label queries over every slot --------------------------------------------------------
    def _label_mask(self, req: Requirement) -> np.ndarray:
        col = self.label_cols.get(req.key)
        op = req.operator
        if col is None:
            return np.full(self._cap, op in ("NotIn", "DoesNotExist"), bool)
        if op == "Exists":
            return col >= 0
        if op == "DoesNotExist":
            return col < 0
        vocab = self.label_vocab[req.key]
        codes = [vocab[v] for v in req.values if v in vocab]
        hit = (col == codes[0]) if len(codes) == 1 else np.isin(col, codes)
        return hit if op == "In" else ~hit

    def match_selector(self, selector: LabelSelector) -> np.ndarray:
        """Slots whose labels ``selector`` selects (free slots included; mask with ``node_row``)."""
        mask = np.ones(self._cap, bool)
        for key, value in selector.match_labels:
            col = self.label_cols.get(key)
            code = self.label_vocab.get(key, {}).get(value)
            if col is None or code is None:
                return np.zeros(self._cap, bool)
            mask &= col == code
        for req in selector.expressions:
            mask &= self._label_mask(req)
        return mask

    def in_namespaces(self, names: Iterable[str]) -> np.ndarray:
        codes = [c for n in names if (c := self.ns_codes.get(n)) is not None]
        if not codes:
            return np.zeros(self._cap, bool)
        return (self.ns == codes[0]) if len(codes) == 1 else np.isin(self.ns, codes)
