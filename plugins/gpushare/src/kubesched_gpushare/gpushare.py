"""``GpuShare``: GPU sharing as a Filter/Reserve plugin (the simulator's ``Open-Gpu-Share``).

A node's GPUs are devices of 1000 milli-GPU. A pod asking for a share (``gpu-count`` 1,
``gpu-milli`` < 1000) takes part of one device; a pod asking for whole GPUs takes that many
wholly free devices. Filter keeps the nodes of an accepted model with enough devices that have
room; Reserve picks the devices (``gpuSelection``: BestFit, WorstFit, Random, or FGD, the device
whose use leaves the least fragmentation, which needs ``FGDScore`` in the profile), Unreserve gives
them back and PreBind records them on the pod as ``alibabacloud.com/gpu-index``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.framework import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    InputError,
    Memo,
    NodeTableView,
    NodeVerdicts,
    PodInfo,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    Status,
)
from kubesched.gpus.sharing import GPU_INDEX, MILLI, GpuRequest, format_index
from kubesched_gpushare.state import GpuState, best_fit, pod_request, random_fit, worst_fit

STATE_KEY = "GpuShare"
SELECTIONS = ("BestFit", "WorstFit", "Random", "FGD")
REASON_NO_GPU = "node(s) had no GPU"
REASON_MODEL = "node(s) didn't have the requested GPU model"
REASON_ROOM = "node(s) didn't have enough free GPU"
_REASONS = {1: (REASON_NO_GPU,), 2: (REASON_MODEL,), 3: (REASON_ROOM,)}
# a reason's code: a wrong model or no GPU at all cannot change by preemption; a lack of room can
_CODES = np.array(
    [0, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.UNSCHEDULABLE], np.int8
)


@dataclass
class GpuShareArgs:
    """pluginConfig args: ``gpuSelection`` picks the devices on the chosen node."""

    gpu_selection: str = "BestFit"

    def validate(self) -> None:
        if self.gpu_selection not in SELECTIONS:
            raise InputError(
                f'Unsupported value: "{self.gpu_selection}": supported values: {", ".join(SELECTIONS)}',
                field="gpuSelection",
            )


def sigmoid(x: np.ndarray | float) -> Any:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


class GpuShare(PreFilterPlugin, FilterPlugin, ReservePlugin, PreBindPlugin, EnqueueExtensions):
    name = "GpuShare"
    Args = GpuShareArgs
    args: GpuShareArgs
    # PreFilter reads the pod's annotations and CPU alone: pods of one template may replay it
    pre_filter_memo = Memo()

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        if handle is None:
            raise InputError("GpuShare: the plugin needs the scheduler's handle")
        self.cluster: Handle = handle
        self.state = GpuState.of(handle)

    # -- PreFilter / Filter -----------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            req = pod_request(pod)
        except ValueError as exc:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(exc),))
        if not req.gpu_count:
            return None, Status(Code.SKIP, ())
        state.write(STATE_KEY, req)
        return None, None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        req: GpuRequest | None = state.get(STATE_KEY)
        if req is None:
            return None
        g = self.state
        rows = g.rows_for(nodes)
        static, short = g.verdict_columns(req.gpu_model, rows)
        if req.gpu_count == 1:  # one share (or one whole GPU): the largest free share decides
            room = g.max_left[rows] >= req.gpu_milli
        else:  # several GPUs are whole GPUs (request_of refuses several shares)
            room = g.free[rows] >= req.gpu_count
        reason = np.where(room, static, short)
        if not np.count_nonzero(reason):
            return None
        return NodeVerdicts(_CODES[reason], reason, lambda rid: _REASONS[rid], checked=True)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE)),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE | ActionType.UPDATE_NODE_LABEL)
            ),
        ]

    # -- Reserve / Unreserve / PreBind -------------------------------------------------------------
    def choose(self, pod: PodInfo, req: GpuRequest, row: int) -> list[int]:
        g = self.state
        left, count = g.gpu_left[row], int(g.gpu_count[row])
        method = self.args.gpu_selection
        if method == "WorstFit":
            return worst_fit(left, count, req)
        if method == "Random":
            return random_fit(left, count, req, g.rng)
        if method == "FGD" and req.shares_gpu:
            if g.frag is None:
                raise LookupError("gpuSelection FGD needs the FGDScore plugin (and its typicalPods) in the profile")
            return fgd_device(g, row, req)
        return best_fit(left, count, req)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        req: GpuRequest | None = state.get(STATE_KEY)
        if req is None:
            return None
        g = self.state
        row = g.row_of(node_name, self.cluster.snapshot.table)
        if row is None:
            return Status.error(f"GpuShare: node {node_name} is not known")
        try:
            devices = self.choose(pod, req, row)
        except LookupError as exc:
            return Status.error(str(exc))
        if len(devices) != req.gpu_count:
            return Status.error(f"GpuShare: no GPU left on node {node_name} for pod {pod.key}")
        g.allocate(pod.uid, row, req.gpu_milli, devices, req.affinity)
        state.write(STATE_KEY + "/devices", devices)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        if state.get(STATE_KEY) is not None:
            self.state.release(pod.uid)

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        devices = state.get(STATE_KEY + "/devices")
        if devices is None:
            return None
        try:
            self.cluster.client.annotate_pod(pod.namespace, pod.name, {GPU_INDEX: format_index(devices)})
        except Exception as exc:  # an API error fails the binding cycle, which unreserves
            return Status.error(f"recording the GPUs of pod {pod.key}: {exc}")
        return None


def fgd_device(g: GpuState, row: int, req: GpuRequest) -> list[int]:
    """For a GPU share, the device whose use lowers the node's fragmentation most (the first of
    equals): ``allocateGpuIdBasedOnFGDScore``, scored as ``calculateGpuShareFragExtendScore``.
    One node's few devices: each state through ``Fragmentation.amount_of``, without numpy."""
    frag = g.frag
    assert frag is not None
    left = g.gpu_left[row].tolist()
    cands = [d for d in range(int(g.gpu_count[row])) if left[d] >= req.gpu_milli]
    if not cands:
        return []
    cpu_left = _cpu_left(g, row, req)
    model = int(g.model[row])
    before = frag.amount_of(cpu_left, left, model)  # the node as it is
    best, best_score = cands[0], -1
    for d in cands:
        after = list(left)
        after[d] -= req.gpu_milli
        gain = (before - frag.amount_of(cpu_left - req.cpu_milli, after, model)) / MILLI
        score = math.trunc(1.0 / (1.0 + math.exp(-gain)) * 100)
        if score > best_score:
            best, best_score = d, score
    return [best]


def _cpu_left(g: GpuState, row: int, req: GpuRequest) -> int:
    """The node's free CPU as the cycle's snapshot saw it: Reserve runs after the pod is assumed."""
    table = g.cache.table
    i = table.index.get(g.names[row])
    if i is None:
        return 0
    return int(table.alloc[0, i] - table.requested[0, i]) + req.cpu_milli
