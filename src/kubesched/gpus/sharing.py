"""The GPU-sharing resource model of Alibaba's GPU trace, as the FGD paper's simulator defines it.

Upstream kube-scheduler has no GPU sharing; this module holds the model that the out-of-tree
``kubesched-gpushare`` plugins schedule with and that ``kubesched replay`` measures with, so the
measures are computed from the pods' recorded allocations, independently of the plugin's state.

- A pod asks through annotations (``alibabacloud.com/gpu-count``, ``gpu-milli`` per GPU,
  ``gpu-card-model`` as ``A|B``), as ``data/pod_csv_to_yaml.py`` of
  hkust-adsl/kubernetes-scheduler-simulator writes them; the GPUs it got are recorded in
  ``alibabacloud.com/gpu-index`` (device ids joined by ``-``).
- A node has ``alibabacloud.com/gpu-count`` GPUs of 1000 milli-GPU each, of the model in its
  ``alibabacloud.com/gpu-card-model`` label.
- Typical pods (``GetTypicalPods`` in ``pkg/utils/frag.go``): the most frequent request shapes that
  cover a popularity threshold (95 % in the paper's runs) of the workload, with their frequencies.
- Fragmentation (``NodeGpuShareFragAmount``): for each typical pod, the idle GPU milli of a node that
  pod could not use: all of it when the pod cannot run there at all (no GPU wanted, wrong model, too
  few GPUs with room, too little CPU), else the GPUs whose free share is below the pod's; weighted by
  the pods' frequencies. Vectorized over any number of node states.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.quantity import milli_value

MILLI = 1000
MAX_GPUS_PER_NODE = 8  # simontype.MaxNumGpuPerNode
MAX_SPEC_CPU = 128_000  # gpushareutils.MaxSpecCpu: the largest node's CPU, for normalized scores
MAX_SPEC_GPU = 8_000  # gpushareutils.MaxSpecGpu

GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
GPU_INDEX = "alibabacloud.com/gpu-index"
INDEX_SEP = "-"
DEFAULT_CPU_MILLI = 100  # schedutil.DefaultMilliCPURequest


@dataclass(frozen=True, slots=True, order=True)
class GpuRequest:
    """What a pod asks for, in the simulator's ``PodResource`` terms: CPU (millicores), GPUs and
    the share of each GPU (1000 for whole GPUs), and the models it accepts ("" for any)."""

    cpu_milli: int
    gpu_milli: int
    gpu_count: int
    gpu_model: str = ""

    @property
    def total_milli(self) -> int:
        return self.gpu_milli * self.gpu_count

    @property
    def shares_gpu(self) -> bool:
        return self.gpu_count == 1 and self.gpu_milli < MILLI

    @property
    def affinity(self) -> str:
        """``GetGpuAffinityFromPodAnnotation``: ``no-gpu``, ``share-gpu`` or ``<n>-gpu``."""
        if self.gpu_count == 0:
            return "no-gpu"
        return "share-gpu" if self.shares_gpu else f"{self.gpu_count}-gpu"


def _int_annotation(annotations: Mapping[str, str], key: str) -> int:
    raw = annotations.get(key)
    if raw is None or raw == "":
        return 0
    try:
        value = int(str(raw))
    except ValueError:
        raise ValueError(f"annotation {key}: {raw!r} is not an integer") from None
    if value < 0:
        raise ValueError(f"annotation {key}: {raw!r} must not be negative")
    return value


def request_of(annotations: Mapping[str, str], cpu_milli: int) -> GpuRequest:
    """A pod's request from its annotations (``ValueError`` naming the annotation when malformed).
    A GPU count without a share means whole GPUs; a share above 1000 is capped, as the trace's
    converter caps it."""
    count = _int_annotation(annotations, GPU_COUNT)
    milli = _int_annotation(annotations, GPU_MILLI)
    if count > MAX_GPUS_PER_NODE:
        raise ValueError(f"annotation {GPU_COUNT}: {count} GPUs is more than a node has ({MAX_GPUS_PER_NODE})")
    if count == 0:
        milli = 0
    elif milli == 0 or milli > MILLI:
        milli = MILLI
    if count > 1 and milli < MILLI:
        raise ValueError(f"annotation {GPU_MILLI}: a share of a GPU ({milli}) needs {GPU_COUNT} 1, not {count}")
    model = str(annotations.get(GPU_MODEL) or "") if count else ""
    if "|" in model:
        model = "|".join(m for m in model.split("|") if m)
    key = (cpu_milli, milli, count, model)
    got = _REQUESTS.get(key)
    if got is None:  # a frozen dataclass costs several times the lookup to build
        got = GpuRequest(cpu_milli, milli, count, model)
        if len(_REQUESTS) < _REQUESTS_KEPT:
            _REQUESTS[key] = got
    return got


# the requests seen, by their fields: a workload has a few hundred shapes (frozen: shared)
_REQUESTS: dict[tuple[int, int, int, str], GpuRequest] = {}
_REQUESTS_KEPT = 65536


def request_of_pod(pod: Mapping[str, Any]) -> GpuRequest:
    """``GetPodResource``: the annotations' GPU ask and the containers' CPU requests, each
    container's counted as 100m when unset (``GetNonzeroRequests``)."""
    cpu = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        raw = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
        cpu += DEFAULT_CPU_MILLI if raw is None else milli_value(raw)
    return request_of((pod.get("metadata") or {}).get("annotations") or {}, cpu)


def parse_index(text: str) -> list[int]:
    """Device ids from a ``gpu-index`` annotation (``"0-3"``)."""
    return [int(x) for x in str(text).split(INDEX_SEP) if x != ""]


def format_index(ids: Iterable[int]) -> str:
    return INDEX_SEP.join(str(i) for i in ids)


def model_accepts(spec: str, node_model: str) -> bool:
    """``IsNodeAccessibleToPodByType``: any model when the pod names none; a node without GPUs
    accepts no pod that names one."""
    wanted = [m for m in spec.split("|") if m]
    return not wanted or node_model in wanted


@dataclass(frozen=True, slots=True)
class TypicalPod:
    request: GpuRequest
    weight: float  # frequency, the weights of all typical pods sum to 1


def typical_pods(
    requests: Iterable[GpuRequest], *, threshold: float = 95.0, include_cpu_pods: bool = True
) -> list[TypicalPod]:
    """The most frequent request shapes covering ``threshold`` percent of the workload, their
    frequencies renormalized to sum to 1 (``GetTypicalPods`` with step 1 and no GPU weighting,
    as the paper's runs configure it). Shapes are ordered by count, then by shape, descending."""
    counts = Counter(r for r in requests if include_cpu_pods or r.gpu_count > 0)
    total = sum(counts.values())
    if total == 0:
        return []
    ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    chosen: list[tuple[GpuRequest, int]] = []
    covered = 0
    for shape, n in ordered:
        if covered * 100.0 >= threshold * total:
            break
        chosen.append((shape, n))
        covered += n
    return [TypicalPod(shape, n / covered) for shape, n in chosen]


SEARCH_MIN_STATES = 48  # from this many node states on, Fragmentation counts by binary search


class Fragmentation:
    """The expected fragmented GPU milli of node states for a workload's typical pods.

    Node states are arrays: ``cpu_left`` (K,), ``gpu_left`` (K, 8) milli free per GPU (0 past a
    node's GPU count) and ``model`` (K,) codes into ``models``. Typical pods that share a GPU
    share are evaluated together.
    """

    def __init__(self, typical: Sequence[TypicalPod], models: Sequence[str]) -> None:
        self.typical = list(typical)
        self.models = list(models)
        self._cpu_only_weight = sum(t.weight for t in self.typical if t.request.gpu_count == 0)
        gpu = [t for t in self.typical if t.request.gpu_count > 0]
        self._milli = np.array(sorted({t.request.gpu_milli for t in gpu}), np.int64)  # (G,) distinct shares
        self._group = np.searchsorted(self._milli, [t.request.gpu_milli for t in gpu]).astype(np.int64)  # (T,)
        self._count = np.array([t.request.gpu_count for t in gpu], np.int64)
        self._cpu = np.array([t.request.cpu_milli for t in gpu], np.int64)
        self._weight = np.array([t.weight for t in gpu], np.float64)
        # (models + 1, T): whether each typical pod accepts a node of each model (last: no GPUs)
        self._access = np.array(
            [[model_accepts(t.request.gpu_model, m) for t in gpu] for m in self.models]
            + [[not t.request.gpu_model for t in gpu]],
            bool,
        ).reshape(len(self.models) + 1, len(gpu))
        self._any_model = any(t.request.gpu_model for t in gpu)
        # the same, as Python lists, for ``amount_of`` (one state: numpy's per-call cost would dominate)
        self._milli_list: list[int] = [int(m) for m in self._milli]
        self._terms: list[tuple[int, int, int, float]] = [
            (int(gi), t.request.gpu_count, t.request.cpu_milli, t.weight)
            for gi, t in zip(self._group, gpu, strict=True)
        ]
        self._access_lists: list[list[bool]] = [[bool(a) for a in row] for row in self._access]

    def _room(self, gpu_left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per state and distinct share (K, G): the GPUs with room for it, and the milli on the
        GPUs too full for it."""
        k, gpus = gpu_left.shape
        if k < SEARCH_MIN_STATES:  # compare every GPU with every share: fewest calls
            fits = gpu_left[:, :, None] >= self._milli  # (K, 8, G)
            return fits.sum(axis=1), np.where(fits, 0, gpu_left[:, :, None]).sum(axis=1, dtype=np.int64)
        # many states: each state's GPUs sorted and offset by row make one sorted column, so one
        # binary search per (state, share) counts the GPUs too full, and prefix sums give their milli
        ordered = np.sort(gpu_left, axis=1)
        low = min(0, int(ordered[:, 0].min()))  # no GPU has less than nothing; if one did
        stride = int(ordered[:, -1].max()) - low + int(self._milli[-1]) + 1
        row = np.arange(k, dtype=np.int64)
        offset = row * stride - low
        too_full = (
            np.searchsorted(
                (ordered + offset[:, None]).ravel(), (offset[:, None] + self._milli).ravel(), side="left"
            ).reshape(k, len(self._milli))
            - (row * gpus)[:, None]
        )
        prefix = np.empty((k, gpus + 1), np.int64)
        prefix[:, 0] = 0
        np.cumsum(ordered, axis=1, out=prefix[:, 1:])
        return gpus - too_full, prefix[row[:, None], too_full]

    def amount(self, cpu_left: np.ndarray, gpu_left: np.ndarray, model: np.ndarray) -> np.ndarray:
        """Fragmented GPU milli of each state (``NodeGpuShareFragAmountScore``), float64 (K,)."""
        total = gpu_left.sum(axis=1, dtype=np.int64).astype(np.float64)
        frag = total * self._cpu_only_weight
        if not len(self._weight):
            return frag
        room, small = self._room(gpu_left)
        ok = (room[:, self._group] >= self._count) & (cpu_left[:, None] >= self._cpu)  # (K, T)
        if self._any_model:
            ok &= self._access[np.where(model < 0, len(self.models), model)]
        # the typical pods' terms summed one after another, as ``amount_of`` (and the simulator's
        # loop) adds them: a BLAS dot product would add them in an order of its own, which
        # depends on the CPU it runs on, and a score truncated from the sum could then differ
        terms = np.where(ok, small[:, self._group], total[:, None]) * self._weight
        return frag + np.cumsum(terms, axis=1)[:, -1]

    def amount_of(self, cpu_left: int, gpu_left: Sequence[int], model: int) -> float:
        """``amount`` of one node state, equal to it bit for bit (the same terms added in the
        same order), in plain Python: for a few states numpy's per-call cost would dominate."""
        left = sorted(gpu_left)
        n = len(left)
        total = 0
        for v in left:
            total += v
        # the distinct shares ascending against the GPUs ascending: one walk counts, for each
        # share, the GPUs with room for it and the milli of those too full for it
        room: list[int] = []
        small: list[int] = []
        i = 0
        below = 0
        for m in self._milli_list:
            while i < n and left[i] < m:
                below += left[i]
                i += 1
            room.append(n - i)
            small.append(below)
        access = self._access_lists[len(self.models) if model < 0 else model]
        any_model = self._any_model
        acc = 0.0
        for j, (g, count, cpu, weight) in enumerate(self._terms):
            ok = room[g] >= count and cpu_left >= cpu and (access[j] or not any_model)
            acc += (small[g] if ok else total) * weight
        return total * self._cpu_only_weight + acc

    def amounts_after(self, cpu_left: int, gpu_left: Sequence[int], model: int, request: GpuRequest) -> list[float]:
        """``amount_of`` each state placing ``request`` on a node can leave it in: for a GPU
        share, one per distinct free share it fits in (that GPU loses the share, the node the
        CPU: which GPU of equals does not matter); for whole GPUs or none, the one of the
        simulator's ``NodeResource.Sub`` (the fullest GPUs with room; the node as it is when
        the CPU does not fit)."""
        left = sorted(gpu_left)
        if request.shares_gpu:
            out: list[float] = []
            seen = -1
            for d, v in enumerate(left):
                if v >= request.gpu_milli and v != seen:  # ascending: equal shares are adjacent
                    seen = v
                    after = list(left)
                    after[d] = v - request.gpu_milli
                    out.append(self.amount_of(cpu_left - request.cpu_milli, after, model))
            return out
        if cpu_left < request.cpu_milli:
            return [self.amount_of(cpu_left, left, model)]
        taken = 0
        for d, v in enumerate(left):
            if taken == request.gpu_count:
                break
            if v >= request.gpu_milli:
                left[d] = v - request.gpu_milli
                taken += 1
        return [self.amount_of(cpu_left - request.cpu_milli, left, model)]


class GpuLedger:
    """GPU state of a cluster from its nodes and the allocations recorded on bound pods: the
    replay's own account (``used``, fragmentation), kept apart from any plugin's."""

    def __init__(self) -> None:
        self.row: dict[str, int] = {}
        self.names: list[str] = []
        self.models: list[str] = []
        self._model_code: dict[str, int] = {}
        self.cpu_alloc = np.zeros(0, np.int64)
        self.cpu_used = np.zeros(0, np.int64)
        self.gpu_count = np.zeros(0, np.int64)
        self.gpu_left = np.zeros((0, MAX_GPUS_PER_NODE), np.int64)
        self.model = np.zeros(0, np.int64)
        self.pods: dict[str, tuple[int, GpuRequest, tuple[int, ...]]] = {}  # uid → (row, request, devices)
        # the measures a replay samples after every pod, kept as bind and release change them
        self._capacity_milli = 0
        self._used_milli = 0
        self._used_gpus = 0

    def add_node(self, name: str, cpu_milli: int, gpus: int, model: str) -> None:
        if name in self.row:
            return
        code = -1
        if gpus:
            code = self._model_code.setdefault(model, len(self.models))
            if code == len(self.models):
                self.models.append(model)
        self.row[name] = len(self.names)
        self.names.append(name)
        self.cpu_alloc = np.append(self.cpu_alloc, cpu_milli)
        self.cpu_used = np.append(self.cpu_used, 0)
        self.gpu_count = np.append(self.gpu_count, gpus)
        left = np.zeros((1, MAX_GPUS_PER_NODE), np.int64)
        left[0, :gpus] = MILLI
        self._capacity_milli += gpus * MILLI
        self.gpu_left = np.vstack([self.gpu_left, left])
        self.model = np.append(self.model, code)

    def bind(self, uid: str, node: str, request: GpuRequest, devices: Sequence[int]) -> None:
        """Account a pod bound to ``node`` on ``devices``; refuses an over-commit (a scheduler bug)."""
        if uid in self.pods:
            return
        r = self.row[node]
        if len(devices) != request.gpu_count:
            raise AssertionError(f"pod {uid} on {node}: {len(devices)} devices recorded for {request.gpu_count} GPUs")
        for d in devices:
            if not 0 <= d < self.gpu_count[r] or self.gpu_left[r, d] < request.gpu_milli:
                raise AssertionError(f"pod {uid}: GPU {d} of {node} over-committed")
        milli = request.gpu_milli
        for d in devices:
            before = int(self.gpu_left[r, d])
            self.gpu_left[r, d] = before - milli
            if before == MILLI and milli:
                self._used_gpus += 1
        self._used_milli += milli * len(devices)
        self.cpu_used[r] += request.cpu_milli
        self.pods[uid] = (r, request, tuple(devices))

    def release(self, uid: str) -> None:
        got = self.pods.pop(uid, None)
        if got is None:
            return
        r, request, devices = got
        milli = request.gpu_milli
        for d in devices:
            after = int(self.gpu_left[r, d]) + milli
            self.gpu_left[r, d] = after
            if after == MILLI and milli:
                self._used_gpus -= 1
        self._used_milli -= milli * len(devices)
        self.cpu_used[r] -= request.cpu_milli

    @property
    def capacity_milli(self) -> int:
        return self._capacity_milli

    @property
    def used_milli(self) -> int:
        return self._used_milli

    @property
    def used_gpus(self) -> int:
        """GPUs with any share taken."""
        return self._used_gpus

    def fragmentation(self, frag: Fragmentation) -> float:
        """The cluster's fragmented GPU milli (sum over nodes)."""
        if not self.names:
            return 0.0
        return float(frag.amount(self.cpu_alloc - self.cpu_used, self.gpu_left, self.model).sum())
