"""NodeResourcesFit (PreFilter, Filter, PreScore, Score): does the pod fit the node's free resources.

Filter (``fitsRequest``): "Too many pods" when the pod count is at allocatable; "Insufficient <r>"
for every requested resource above allocatable − requested. The status is
UnschedulableAndUnresolvable when some request exceeds the node's whole allocatable (no
preemption can help), else Unschedulable. Score uses the configured strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo
from kubesched.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.plugins.dynamicresources.extended import is_dra_extended_resource_name, resolver_for
from kubesched.scheduler.plugins.noderesources import scoring
from kubesched.scheduler.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    FitArgs,
    parse_fit_args,
)

STATE_KEY = "PreFilterNodeResourcesFit"
TOO_MANY_PODS = "Too many pods"
_I8_UNSCHEDULABLE = np.int8(Code.UNSCHEDULABLE)
_SHIFTS = np.arange(1, 8, dtype=np.uint8)[:, None]  # resource i's bit in the Filter's reasons: i + 1


@dataclass(frozen=True, slots=True)
class _FitRequest:
    """The pod's request as the Filter checks it: resource names and values, in upstream's order."""

    names: tuple[str, ...]
    values: np.ndarray
    column: np.ndarray  # values as a column, against resources × nodes
    standard: bool  # names lead the node table's columns (cpu, memory, ephemeral-storage)
    extended: bool  # some name is an extended resource (may be backed by DRA)

    def describe(self, bits: int) -> tuple[str, ...]:
        out = [TOO_MANY_PODS] if bits & 1 else []
        out.extend(f"Insufficient {n}" for i, n in enumerate(self.names) if bits & (2 << i))
        return tuple(out)


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    name = "NodeResourcesFit"
    # PreFilter: the pod's requests (under the args); PreScore does nothing
    pre_filter_memo = Memo()
    pre_score_memo = Memo()
    cross_node = False  # the verdict on a node depends on that node's pods alone

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): the pod's effective requests (``computePodResourceRequest``)."""
        return [SignFragment("Resources", tuple(sorted(pod.requests.items())))], None

    def shape_pod(self, state: CycleState, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """The shape cache: nothing beyond the signature, unless some request may be left to
        DynamicResources (a DeviceClass provides it), whose verdict reads ResourceSlices and
        claims."""
        req: _FitRequest | None = state.get(STATE_KEY)
        if req is None or self._delegated(req):
            return [], Status(Code.UNSCHEDULABLE, ("requests backed by DRA",))
        return [], None

    scores_bounded = True
    rows_only = True

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.fit_args: FitArgs = parse_fit_args(args)
        self.weights = np.array([w for _, w in self.fit_args.resources], np.int64)
        self._weight_sum = max(int(self.weights.sum()), 1)
        self._unit_weights = self.weights.tolist() == [1, 1]
        self._least_cpu_memory = self.fit_args.strategy == LEAST_ALLOCATED and scoring.is_cpu_memory(
            self.fit_args.resources
        )
        self._cache: dict[tuple[tuple[str, int], ...], _FitRequest] = {}

    def _ignored(self, name: str) -> bool:
        if "/" not in name or name.startswith("kubernetes.io/"):
            return False
        return name in self.fit_args.ignored_resources or name.split("/")[0] in self.fit_args.ignored_resource_groups

    def _fit_request(self, pod: PodInfo) -> _FitRequest:
        key = tuple(sorted(pod.requests.items()))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        std = [(n, pod.requests.get(n, 0)) for n in (CPU, MEMORY, EPHEMERAL_STORAGE)]
        scalars = sorted((n, v) for n, v in pod.requests.items() if n not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS))
        pairs = [(n, v) for n, v in std + scalars if v > 0 and not self._ignored(n)]
        names = tuple(n for n, _ in pairs)
        values = np.array([v for _, v in pairs], np.int64)
        req = _FitRequest(
            names,
            values,
            values[:, None],
            names == (CPU, MEMORY, EPHEMERAL_STORAGE)[: len(names)],
            any("/" in n for n in names),
        )
        if len(self._cache) < 4096:
            self._cache[key] = req
        return req

    def _some_alloc_below(self, nodes: NodeTableView, req: _FitRequest) -> bool:
        """Whether some node's allocatable is below the pod's request of a standard resource (its
        verdict is then UnschedulableAndUnresolvable, as ``fitsRequest`` marks an insufficient
        resource whose request exceeds the allocatable itself: upstream's
        pkg/scheduler/framework/plugins/noderesources/fit.go): from each resource's least
        allocatable, which the table keeps while its nodes stand."""
        least_alloc = cast(NodeTable, nodes).least_alloc()  # the in-tree table (resource_column too)
        return any(v > least_alloc[i] for i, v in enumerate(req.values.tolist()))

    def _delegated(self, req: _FitRequest) -> list[int]:
        """The requested resources that may go to DynamicResources (extended resources backed by
        DRA, KEP-5004): those a DeviceClass names; on a node without any allocatable of one, the
        check is left to DynamicResources (``shouldDelegateResourceToDRA``)."""
        if not req.extended:
            return []
        resolver = resolver_for(self.handle)
        if not resolver:
            return []
        return [
            i for i, n in enumerate(req.names) if is_dra_extended_resource_name(n) and resolver.class_for(n) is not None
        ]

    # PreFilter -------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(STATE_KEY, self._fit_request(pod))
        return None, None

    # Filter ----------------------------------------------------------------------------------
    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        req: _FitRequest | None = state.get(STATE_KEY)
        if req is None:
            req = self._fit_request(pod)
        too_many = nodes.pod_count >= nodes.alloc_pods
        k = len(req.names)
        if req.standard:  # cpu, memory, ephemeral-storage lead the table: plain slices
            requested, alloc = nodes.requested[:k], nodes.alloc[:k]
        else:
            # a resource no node has gets a zero row in the table (in-tree: the concrete table);
            # row indexing copies just these rows; ``take`` on the (strided) view would first copy
            # the whole resources × nodes matrix (thousands of distinct extended resources)
            cols = [cast(NodeTable, nodes).resource_column(name) for name in req.names]
            requested, alloc = nodes.requested[cols], nodes.alloc[cols]
        want = req.column
        short = requested + want > alloc  # resources × nodes
        delegated = self._delegated(req)
        on_dra: list[tuple[int, np.ndarray]] = []
        if delegated:  # shouldDelegateResourceToDRA: no node allocatable, a DeviceClass provides it
            for i in delegated:
                on_dra.append((i, alloc[i] == 0))
                short[i] &= ~on_dra[-1][1]
        if not np.count_nonzero(short) and not np.count_nonzero(too_many):  # count_nonzero: cheaper than any()
            return None
        # bit 0: too many pods; bit i + 1: short of resource i
        bits: np.ndarray
        if k < 8:  # the usual few resources: each row's bits shifted into place and summed, in bytes
            bits = np.add.reduce(short.view(np.uint8) << _SHIFTS[:k], axis=0, dtype=np.uint8) | too_many
        else:
            bits = too_many.astype(np.int64)
            for i in range(k):  # over the pod's requested resources, not over nodes
                bits |= short[i].astype(np.int64) << (i + 1)
        failed = bits != 0
        code = failed.view(np.int8) * _I8_UNSCHEDULABLE  # np.where costs three times this
        if on_dra or not req.standard or self._some_alloc_below(nodes, req):
            unresolvable_rows = alloc < want
            for i, on in on_dra:
                unresolvable_rows[i] &= ~on
            unresolvable = np.logical_or.reduce(unresolvable_rows, axis=0) & failed
            code[unresolvable] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return NodeVerdicts(code, bits, req.describe, checked=True)

    # Score -----------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> Status | None:
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        rr = scoring.ResourceRows.of(state, nodes, rows)
        if self._least_cpu_memory:  # the default
            return scoring.least_allocated_cpu_memory(
                rr, pod, self.weights, self._weight_sum, unit_weights=self._unit_weights
            )
        base, pod_req, alloc = scoring.requested_matrix(rr, nodes, pod, self.fit_args.resources, use_requested=False)
        req = base + pod_req[:, None]
        if self.fit_args.strategy == LEAST_ALLOCATED:
            return scoring.least_allocated(req, alloc, self.weights)
        if self.fit_args.strategy == MOST_ALLOCATED:
            return scoring.most_allocated(req, alloc, self.weights)
        return scoring.requested_to_capacity_ratio(req, alloc, self.weights, self.fit_args.shape)

    # Queueing hints ------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        def node_fits(pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterNodeChange``: the pod fits the node's allocatable, and, for an
            updated node, the allocatable of something it requests (or the pod count) grew."""
            if not isinstance(new, NodeSpecInfo):
                return True
            if new.allocatable.get(PODS, 0) < 1:
                return False
            requested = {n: v for n, v in pod.requests.items() if v > 0 and n != PODS}
            if not all(v <= new.allocatable.get(n, 0) for n, v in requested.items() if not self._ignored(n)):
                return False
            if not isinstance(old, NodeSpecInfo):  # added
                return True
            # haveAnyRequestedResourcesIncreased
            if new.allocatable.get(PODS, 0) > old.allocatable.get(PODS, 0):
                return True
            return any(new.allocatable.get(n, 0) > old.allocatable.get(n, 0) for n in requested)

        node_events = (
            ActionType.ADD
            | ActionType.UPDATE_NODE_ALLOCATABLE
            | ActionType.UPDATE_NODE_TAINT
            | ActionType.UPDATE_NODE_LABEL
        )
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN)),
            ClusterEventWithHint(ClusterEvent(NODE, node_events), node_fits),
            # DRAExtendedResource: a DeviceClass may start providing an extended resource no node has
            ClusterEventWithHint(ClusterEvent("DeviceClass", ActionType.ADD | ActionType.UPDATE)),
        ]
