"""Per-node GPU devices as the GPU-sharing plugins see them (the simulator's ``GpuNodeInfo`` cache).

One ``GpuState`` per scheduler (keyed by its cache), shared by ``GpuShare`` and the score
policies of every profile. Rows are the state's own, one per node ever seen; ``rows_for(nodes)``
maps a node table's rows to them (cached while the table's layout holds). Pods arrive and leave
through the scheduler cache's pod listener, so assumed pods count at once and deleted or
forgotten pods give their devices back.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.framework import Handle, NodeTableView, PodInfo, Snapshot
from kubesched.gpus.sharing import (
    GPU_COUNT,
    GPU_INDEX,
    GPU_MODEL,
    MAX_GPUS_PER_NODE,
    MILLI,
    Fragmentation,
    GpuRequest,
    model_accepts,
    parse_index,
    request_of,
)

_STATES: weakref.WeakKeyDictionary[Any, GpuState] = weakref.WeakKeyDictionary()
AFFINITY_TAGS = ("share-gpu", "1-gpu", "2-gpu", "4-gpu", "8-gpu")


def pod_request(pod: PodInfo) -> GpuRequest:
    """The pod's GPU request, parsed once per pod (cached in ``pod.extra``)."""
    got = pod.extra.get("gpushare.request")
    if got is None:
        annotations = (pod.obj.get("metadata") or {}).get("annotations") or {}
        got = request_of(annotations, pod.non_zero_cpu)
        pod.extra["gpushare.request"] = got
    return got


class GpuState:
    def __init__(self, cache: Snapshot, seed: int) -> None:
        # weakly: _STATES maps the cache to this state, and a strong reference back would keep both alive
        self._cache = weakref.ref(cache)
        self.row: dict[str, int] = {}
        self.names: list[str] = []
        self.models: list[str] = []
        self._model_code: dict[str, int] = {}
        self.gpu_count = np.zeros(0, np.int64)
        self.gpu_left = np.zeros((0, MAX_GPUS_PER_NODE), np.int64)
        self.model = np.zeros(0, np.int64)  # -1: no GPUs
        self.version = np.zeros(0, np.int64)  # bumped whenever a node's devices change
        # per node, kept with gpu_left: the largest free share and the wholly free GPUs, so that
        # Filter reads one column (a share fits where max_left >= it; n whole GPUs where free >= n)
        self.max_left = np.zeros(0, np.int64)
        self.free = np.zeros(0, np.int64)
        self.affinity = np.zeros((0, len(AFFINITY_TAGS) + 1), np.int64)  # pods per affinity tag, last: others
        self.alloc: dict[str, tuple[int, int, tuple[int, ...]]] = {}  # uid → (row, milli per GPU, devices)
        self.frag: Fragmentation | None = None  # set by FGDScore: the workload's typical pods
        self.rng = random.Random(seed)
        self._rows_index: Any = None
        self._rows_len = -1
        self._rows = np.zeros(0, np.int64)
        self._access: dict[str, np.ndarray] = {}
        self._verdicts: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        cache.add_pod_listener(self._on_pod)  # (the cache holds this state from here on)

    @property
    def cache(self) -> Snapshot:
        cache = self._cache()
        assert cache is not None, "the scheduler's snapshot outlives its plugins' state"
        return cache

    @classmethod
    def of(cls, handle: Handle) -> GpuState:
        cache = handle.snapshot
        state = _STATES.get(cache)
        if state is None:
            state = cls(cache, handle.rng.getrandbits(64))
            _STATES[cache] = state
        return state

    # -- nodes ------------------------------------------------------------------------------------
    def _add_node(self, name: str, gpus: int, model: str) -> int:
        gpus = max(0, min(int(gpus), MAX_GPUS_PER_NODE))
        code = -1
        if gpus:
            code = self._model_code.setdefault(model, len(self.models))
            if code == len(self.models):
                self.models.append(model)
                self._access.clear()
                if self.frag is not None:
                    self.frag = Fragmentation(self.frag.typical, self.models)
        r = len(self.names)
        self.row[name] = r
        self.names.append(name)
        left = np.zeros((1, MAX_GPUS_PER_NODE), np.int64)
        left[0, :gpus] = MILLI
        self.gpu_count = np.append(self.gpu_count, gpus)
        self.gpu_left = np.vstack([self.gpu_left, left])
        self.model = np.append(self.model, code)
        self.version = np.append(self.version, 0)
        self.max_left = np.append(self.max_left, MILLI if gpus else 0)
        self.free = np.append(self.free, gpus)
        self.affinity = np.vstack([self.affinity, np.zeros((1, self.affinity.shape[1]), np.int64)])
        for pod in self.cache.pods_on(name):  # pods that arrived before the plugins met the node
            self._on_pod("add", pod, name, self.cache.is_assumed(pod.uid))
        return r

    def rows_for(self, nodes: NodeTableView) -> np.ndarray:
        """The state row of every row of ``nodes`` (nodes seen for the first time are added from
        their spec: ``alibabacloud.com/gpu-count`` allocatable, the model label)."""
        # (a what-if table may repeat a node's row: preemption's dry run has one per victim rank)
        if nodes.index is self._rows_index and len(nodes.names) == self._rows_len:
            return self._rows
        out = np.empty(len(nodes.names), np.int64)
        for i, name in enumerate(nodes.names):
            r = self.row.get(name)
            if r is None:
                spec = nodes.specs[i]
                r = self._add_node(name, spec.allocatable.get(GPU_COUNT, 0), spec.labels.get(GPU_MODEL, ""))
            out[i] = r
        self._rows_index, self._rows_len, self._rows = nodes.index, len(nodes.names), out
        return out

    def row_of(self, node: str, nodes: NodeTableView | None = None) -> int | None:
        r = self.row.get(node)
        if r is None and nodes is not None and node in nodes.index:
            r = int(self.rows_for(nodes)[nodes.index[node]])
        return r

    def accepts(self, spec: str) -> np.ndarray:
        """Per state row, whether a pod asking for models ``spec`` may use the node's GPUs."""
        got = self._access.get(spec)
        if got is None or len(got) != len(self.models) + 1:
            got = np.array([model_accepts(spec, m) for m in self.models] + [False], bool)
            self._access[spec] = got
        return got[np.where(self.model < 0, len(self.models), self.model)]

    def verdict_columns(self, spec: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """GpuShare's Filter reasons for ``rows`` (of ``rows_for``) that do not change while the
        nodes stand: 1 no GPU, 2 not a model ``spec`` accepts, else 0; and the reason where the
        node lacks room (3 unless one of those). Kept per model spec while ``rows`` is the same."""
        got = self._verdicts.get(spec)
        if got is not None and got[0] is rows:
            return got[1], got[2]
        static = np.zeros(len(rows), np.int64)
        if spec:
            static[~self.accepts(spec)[rows]] = 2
        static[self.gpu_count[rows] == 0] = 1
        short = np.where(static == 0, 3, static)
        self._verdicts[spec] = (rows, static, short)
        return static, short

    # -- devices ----------------------------------------------------------------------------------
    def allocate(self, uid: str, row: int, milli: int, devices: Sequence[int], affinity: str) -> None:
        if uid in self.alloc:
            return
        for d in devices:
            self.gpu_left[row, d] -= milli
        self.alloc[uid] = (row, milli, tuple(devices))
        self._changed(row)

    def release(self, uid: str) -> None:
        got = self.alloc.pop(uid, None)
        if got is None:
            return
        row, milli, devices = got
        for d in devices:
            self.gpu_left[row, d] += milli
        self._changed(row)

    def _changed(self, row: int) -> None:
        left = self.gpu_left[row].tolist()  # one node's eight GPUs: plain ints beat numpy calls
        self.max_left[row] = max(left)
        self.free[row] = left.count(MILLI)
        self.version[row] += 1

    def _tag_column(self, tag: str) -> int:
        return AFFINITY_TAGS.index(tag) if tag in AFFINITY_TAGS else len(AFFINITY_TAGS)

    def _on_pod(self, event: str, pod: PodInfo, node: str, assumed: bool) -> None:
        r = self.row.get(node)
        if r is None:
            return  # a node the plugins have not met yet: its pods are counted when they do
        try:
            req = pod_request(pod)
        except ValueError:
            return
        if req.gpu_count:
            self.affinity[r, self._tag_column(req.affinity)] += 1 if event == "add" else -1
        self.version[r] += 1
        if event == "remove":
            self.release(pod.uid)
            return
        if assumed or not req.gpu_count or pod.uid in self.alloc:
            return  # an assumed pod gets its devices at Reserve
        # a pod bound elsewhere (or before this scheduler started): its recorded devices, else a best fit
        index = ((pod.obj.get("metadata") or {}).get("annotations") or {}).get(GPU_INDEX)
        devices = parse_index(index) if index else best_fit(self.gpu_left[r], int(self.gpu_count[r]), req)
        if devices and len(devices) == req.gpu_count and all(0 <= d < self.gpu_count[r] for d in devices):
            self.allocate(pod.uid, r, req.gpu_milli, devices, req.affinity)


def exclusive_devices(left: np.ndarray, count: int, req: GpuRequest) -> list[int]:
    """``AllocateExclusiveGpuId``: the first ``gpu_count`` wholly free GPUs, in device order."""
    free = np.flatnonzero(left[:count] >= MILLI)
    return free[: req.gpu_count].tolist() if len(free) >= req.gpu_count else []


def best_fit(left: np.ndarray, count: int, req: GpuRequest) -> list[int]:
    """``allocateGpuIdBasedOnBestFit``: a share goes to the fullest GPU it fits (the first of
    equals); whole GPUs are taken as ``exclusive_devices``."""
    if not req.shares_gpu:
        return exclusive_devices(left, count, req)
    room = np.where(left[:count] >= req.gpu_milli, left[:count], MILLI + 1)
    i = int(np.argmin(room))
    return [i] if room[i] <= MILLI else []


def worst_fit(left: np.ndarray, count: int, req: GpuRequest) -> list[int]:
    """``allocateGpuIdBasedOnWorstFit``: a share goes to the emptiest GPU it fits (the first of equals)."""
    if not req.shares_gpu:
        return exclusive_devices(left, count, req)
    room = np.where(left[:count] >= req.gpu_milli, left[:count], -1)
    i = int(np.argmax(room))
    return [i] if room[i] >= 0 else []


def random_fit(left: np.ndarray, count: int, req: GpuRequest, rng: random.Random) -> list[int]:
    """``allocateGpuIdBasedOnRandomFit``: a share goes to a GPU it fits drawn uniformly."""
    if not req.shares_gpu:
        return exclusive_devices(left, count, req)
    fits = np.flatnonzero(left[:count] >= req.gpu_milli).tolist()
    return [fits[rng.randrange(len(fits))]] if fits else []
