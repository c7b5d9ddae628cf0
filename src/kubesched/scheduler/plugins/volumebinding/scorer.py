"""VolumeBinding's Score under StorageCapacityScoring (beta and on in v1.37): per node, each storage
class's requested over offered capacity, through the args' shape (default: an empty volume 100, a
full one 0), averaged over the classes and rounded. Volumes bound statically count their PV's
capacity; with none, provisioned claims count the node's CSIStorageCapacity
(``pkg/scheduler/framework/plugins/volumebinding/scorer.go`` and ``volume_binding.go``, Score)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kubesched.api.quantity import value as quantity_value
from kubesched.api.volumes import claim_class, requested_storage
from kubesched.errors import InputError
from kubesched.scheduler.plugins.noderesources.scoring import broken_linear

MAX_UTILIZATION = 100
# VolumeBindingArgs' shape when StorageCapacityScoring is on and none is given
# (pkg/scheduler/apis/config/v1/defaults.go, SetDefaults_VolumeBindingArgs)
DEFAULT_SHAPE: tuple[tuple[int, int], ...] = ((0, 10), (100, 0))


def shape_of(raw: list[Any] | None) -> tuple[tuple[int, int], ...]:
    """The args' ``shape`` as (utilization, score) points, upstream's default when unset."""
    if not raw:
        return DEFAULT_SHAPE
    return tuple((int(p.get("utilization", 0)), int(p.get("score", 0))) for p in raw)


def _storage(obj: Mapping[str, Any], path: str) -> int:
    raw = ((obj.get("spec") or {}).get(path) or {}).get("storage")
    try:
        return quantity_value(raw) if raw is not None else 0
    except InputError:
        return 0


class Classes:
    """Requested and offered bytes per storage class over a batch of nodes."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.requested: dict[str, np.ndarray] = {}
        self.capacity: dict[str, np.ndarray] = {}
        self.present: dict[str, np.ndarray] = {}

    def add(self, cls: str, rows: np.ndarray, requested: int, capacity: np.ndarray, *, replace: bool = False) -> None:
        if cls not in self.requested:
            self.requested[cls] = np.zeros(self.n, np.int64)
            self.capacity[cls] = np.zeros(self.n, np.int64)
            self.present[cls] = np.zeros(self.n, bool)
        self.requested[cls][rows] += requested
        if replace:  # one provisioned class offers the node's capacity once, however many claims
            self.capacity[cls][rows] = capacity
        else:
            self.capacity[cls][rows] += capacity
        self.present[cls][rows] = True

    def scores(self, shape: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
        """(sum of the classes' scores, number of classes) per node."""
        total = np.zeros(self.n, np.int64)
        count = np.zeros(self.n, np.int64)
        for cls, present in self.present.items():
            req, cap = self.requested[cls], self.capacity[cls]
            full = (cap == 0) | (req > cap)
            util = np.where(full, MAX_UTILIZATION, req * MAX_UTILIZATION // np.maximum(cap, 1))
            total += np.where(present, broken_linear(shape, util), 0)
            count += present
        return total, count


def score(
    n: int,
    matching: list[tuple[dict[str, Any], list[dict[str, Any]], np.ndarray]],
    provisioned: list[dict[str, Any]],
    node_capacity: Callable[[dict[str, Any]], np.ndarray],
    shape: tuple[tuple[int, int], ...],
) -> np.ndarray:
    """The scores of ``n`` nodes: ``matching``, each delayed claim's chosen volume per node
    (index into its candidates, -1: provisioned there); ``provisioned``, the claims provisioned on
    every row; ``node_capacity(pvc)``, the capacity a row's CSIStorageCapacity offers (-1: none)."""
    static, dynamic = Classes(n), Classes(n)
    has_static = np.zeros(n, bool)
    for pvc, candidates, choice in matching:
        bound = choice >= 0
        if bound.any():
            caps = np.array([_storage(pv, "capacity") for pv in candidates], np.int64)
            by_class: dict[str, list[int]] = {}
            for i, pv in enumerate(candidates):
                by_class.setdefault(str((pv.get("spec") or {}).get("storageClassName") or ""), []).append(i)
            for cls, indexes in by_class.items():
                rows = bound & np.isin(choice, indexes)
                if rows.any():
                    static.add(cls, rows, requested_storage(pvc), caps[choice[rows]])
            has_static |= bound
    for pvc in [*provisioned, *(pvc for pvc, _, choice in matching)]:
        explicit = next((choice for p, _, choice in matching if p is pvc), None)
        rows = np.ones(n, bool) if explicit is None else explicit < 0
        offered = node_capacity(pvc)
        rows &= offered >= 0
        if rows.any():
            dynamic.add(claim_class(pvc), rows, requested_storage(pvc), offered[rows], replace=True)
    s_total, s_count = static.scores(shape)
    d_total, d_count = dynamic.scores(shape)
    total = np.where(has_static, s_total, d_total)
    count = np.where(has_static, s_count, d_count)
    # math.Round: halves away from zero (scores are not negative)
    return np.where(count > 0, (2 * total + count) // np.maximum(2 * count, 1), 0)
