"""Assigned pods as columns (node row, priority, start time, requests): what preemption asks of
every node at once — "how much would removing the pods below priority p free here?" — answered
with one ``bincount`` instead of a walk over each node's pod list. Kept by the cache."""

from __future__ import annotations

import math

import numpy as np

from kubesched.api.pod import PodInfo
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

    def remove(self, uid: str) -> None:
        i = self.slot.pop(uid, None)
        if i is None:
            return
        self.pods[i] = None
        self.node_row[i] = -1
        self._free.append(i)

    def node_removed(self, row: int) -> None:
        """Rows after ``row`` shift up by one, as in the NodeTable; the node's pods lose their row."""
        self.node_row[self.node_row == row] = -1
        self.node_row[self.node_row > row] -= 1

    def node_added(self, row: int, uids: list[str]) -> None:
        for uid in uids:
            i = self.slot.get(uid)
            if i is not None:
                self.node_row[i] = row

    def lower_priority(self, priority: int) -> np.ndarray:
        """Slots of pods on a known node with priority below ``priority``."""
        return np.flatnonzero((self.node_row >= 0) & (self.priority < priority))
