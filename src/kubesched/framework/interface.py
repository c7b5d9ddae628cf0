"""Plugin interfaces for every extension point (staging ``k8s.io/kube-scheduler/framework``).

Filter and Score are columnar: a plugin sees the whole ``NodeTable`` and answers for every row
in one pass (``filter_nodes`` → ``NodeVerdicts``, ``score_nodes`` → an int64 array). Plugins
written per node in upstream's shape subclass ``PerNodeFilterPlugin`` / ``PerNodeScorePlugin``
and the framework adapts them (a Python loop over nodes: fine for your own plugins, never used
by the in-tree ones).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.events import ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.nodes import NodeInfo
from kubesched.framework.nodes import NodeTableView as NodeTable
from kubesched.framework.status import Code, Status

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


@dataclass(slots=True)
class NodeVerdicts:
    """One Filter plugin's answer for every row: a Code per row plus a reason id per row.

    ``describe(reason_id)`` turns an id into the status reasons; ids are plugin-defined so that
    building strings is deferred until a message is actually needed. ``checked``: the plugin
    built every code from Success and the rejections (Unschedulable, UnschedulableAndUnresolvable,
    Pending) alone, so the framework need not look among them for an Error, which fails the
    attempt (an int8 ``code`` is looked through in one numpy call otherwise).
    """

    code: np.ndarray
    reason: np.ndarray | int
    describe: Callable[[int], tuple[str, ...]]
    checked: bool = False

    @classmethod
    def reject_where(cls, mask: np.ndarray, code: Code, message: str) -> NodeVerdicts:
        reasons = (message,)
        # the mask's bytes times the code: one numpy call (np.where and the int8 copy were two)
        verdicts = np.asarray(mask, bool).view(np.int8) * _INT8_CODES[code]
        return cls(verdicts, 0, lambda _id: reasons, checked=code in _REJECTIONS)

    def reason_at(self, row: int) -> int:
        return int(self.reason[row]) if isinstance(self.reason, np.ndarray) else self.reason


_INT8_CODES = tuple(np.int8(c) for c in range(max(Code) + 1))  # numpy's fast path: no IntEnum operands
_REJECTIONS = (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)


@dataclass(slots=True)
class PreFilterResult:
    """Node names a PreFilter plugin restricts the search to; ``None`` means all nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return self
        if self.all_nodes():
            return PreFilterResult(other.node_names)
        assert self.node_names is not None and other.node_names is not None
        return PreFilterResult(self.node_names & other.node_names)


MODE_NOOP, MODE_OVERRIDE = 0, 1  # fwk.NominatingMode: leave the pod's nomination, or set it


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    """``fwk.NominatingInfo``: what a failed attempt does to the pod's ``nominatedNodeName``:
    nothing (``MODE_NOOP``), or set it to ``node`` (``MODE_OVERRIDE``; "" clears it)."""

    node: str = ""
    mode: int = MODE_NOOP

    @staticmethod
    def of(node: str | None) -> NominatingInfo:
        """None leaves the nomination alone; a name (or "", none) overrides it."""
        return NominatingInfo() if node is None else NominatingInfo(node, MODE_OVERRIDE)

    def overrides(self) -> bool:
        return self.mode == MODE_OVERRIDE


NOMINATION_KEPT = NominatingInfo()
NOMINATION_CLEARED = NominatingInfo("", MODE_OVERRIDE)


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str | None = None  # None: leave the nomination alone; "": clear it

    @property
    def nominating_info(self) -> NominatingInfo:
        return NominatingInfo.of(self.nominated_node_name)


@dataclass(frozen=True, slots=True)
class Memo:
    """A plugin's promise to the template memo (kubesched's own, ``framework/template_memo.py``
    in the scheduler): for pods of one template (equal namespace, spec, labels, annotations,
    owners and deletion state) its PreFilter or PreScore gives the same result, status and
    CycleState writes, so the framework may replay them instead of calling it. ``guarded``: the
    outcome also depends on cluster state that ``memo_guard(nodes)`` sums up in a cheap value (a
    version, a flag); ``skip_only``: only a Skip may be replayed (other outcomes read more);
    ``when``: only for pods it holds for (asked once per template, e.g. pods without volumes).
    What the point writes is replayed as ``CycleState.clone`` copies it (``clone()``, shared
    when a frozen dataclass, else a shallow copy); PreScore is replayed only over some nodes."""

    guarded: bool = False
    skip_only: bool = False
    when: Callable[[PodInfo], bool] | None = None


class Plugin:
    """Base of every plugin: a unique name and a factory ``(args, handle) -> Plugin``."""

    name: ClassVar[str] = ""

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.args = args
        self.handle = handle

    def memo_guard(self, nodes: NodeTable) -> Hashable:
        """For a ``Memo(guarded=True)``: a cheap value that changes whenever the cluster state
        the memoised outcome reads (``nodes``, the table the point runs over, or more) may have
        changed."""
        return None


class EnqueueExtensions:
    """Cluster events that may make a pod this plugin rejected schedulable (QueueingHints)."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class SignFragment:
    """One part of a pod's scheduling signature (``fwk.SignFragment``): a key and any value
    comparable with ``==``."""

    key: str
    value: Any


class SignPlugin(Plugin):
    """``fwk.SignPlugin`` (KEP-5598, Opportunistic Batching): the parts of a pod its Filter and
    Score depend on. Two pods with equal signatures must get equal verdicts and scores on every
    node. Return a non-success Status for a pod whose results depend on more than the pod and
    the node (other pods, cluster-wide state): it is then not batched. A PreFilter, Filter,
    PreScore or Score plugin that does not implement this turns batching off for its profile."""

    # False when sign_pod never refuses: the framework asks the plugins that may refuse first
    sign_may_refuse: ClassVar[bool] = True
    # True when Filter, PreScore and Score read nothing but the pod's signature and each node's
    # own row of the NodeTable (the Node and the pods on it), never which other nodes are
    # evaluated: the shape cache (framework/shape_cache.py) may then reuse this plugin's
    # verdicts and raw scores for the nodes that did not change; its NormalizeScore must give
    # equal raw scores equal values however many nodes there are. (The in-tree plugins whose
    # results depend on cluster-wide state for some pods tell the cache pod by pod instead.)
    rows_only: ClassVar[bool] = False

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status | None]:
        raise NotImplementedError


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        raise NotImplementedError


class QueuedPodInfo(Protocol):
    """``fwk.QueuedEntityInfo`` as QueueSort sees it: the pod (a pod group's first member), its
    priority (a pod group's is its PodGroup's), when it was (re)queued, when its first attempt
    began, and how many attempts it has had."""

    @property
    def pod(self) -> PodInfo: ...

    @property
    def priority(self) -> int: ...

    @property
    def timestamp(self) -> float: ...

    @property
    def initial_attempt_timestamp(self) -> float | None: ...

    @property
    def attempts(self) -> int: ...


class QueueSortPlugin(Plugin):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether queued pod ``a`` goes before ``b``."""
        raise NotImplementedError

    def sort_key(self, qpod: QueuedPodInfo) -> Any | None:
        """Optional fast path: a key consistent with ``less``; None falls back to ``less``."""
        return None


class PreFilterExtensions:
    def add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, nodes: NodeTable, row: int
    ) -> Status | None:
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, nodes: NodeTable, row: int
    ) -> Status | None:
        return None


class PreFilterPlugin(Plugin):
    # set where PreFilter's outcome may be replayed for pods of one template (see ``Memo``)
    pre_filter_memo: ClassVar[Memo | None] = None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


class FilterPlugin(Plugin):
    # True where the verdict depends only on the pod and the Node object, never on the pods on
    # the node. Rows that already passed then need no second run when pods are added (nominated
    # pods) or removed (preemption's reprieve); the framework skips such plugins there.
    node_only: ClassVar[bool] = False
    # False where the verdict on a node depends on the pods of that node alone, never on pods
    # elsewhere (fit, ports): preemption's dry run may then take victims off many nodes at once.
    # True (the safe default) for topology-wide plugins such as inter-pod affinity and spreading,
    # which upstream's dry run judges one node at a time, every other node's pods in place.
    cross_node: ClassVar[bool] = True

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> NodeVerdicts | None:
        """Verdicts for every row of ``nodes``; None means every node passes."""
        raise NotImplementedError


class PostFilterPlugin(Plugin):
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    # set where PreScore's outcome may be replayed for pods of one template (see ``Memo``)
    pre_score_memo: ClassVar[Memo | None] = None

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: np.ndarray) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Plugin):
    # True where final scores lie in [0, 100] by construction (the in-tree plugins, whose tests
    # pin their formulas); the framework skips its per-cycle range check for them.
    scores_bounded: ClassVar[bool] = False

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        """Raw int64 scores for ``rows`` (feasible nodes), in the order given."""
        raise NotImplementedError

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray | None:
        """NormalizeScore (ScoreExtensions); None when the plugin has none."""
        return None


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        """(status, timeout in seconds); a Wait status parks the pod until allowed or timed out."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """``PreBindPreFlight`` (KEP-5278): whether PreBind has work for the pod on the node —
        Success (None), Skip (PreBind is then not called for it) or Error. Success by default, so
        that a plugin written before v1.34 keeps its PreBind."""
        return None


class BindPlugin(Plugin):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PerNodeFilterPlugin(FilterPlugin):
    """Upstream-shaped Filter: ``filter(state, pod, node_info)``, called once per node."""

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        raise NotImplementedError

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> NodeVerdicts | None:
        assert self.handle is not None
        codes = np.zeros(nodes.n, np.int8)
        reasons: list[tuple[str, ...]] = [()]
        ids = np.zeros(nodes.n, np.int64)
        for row in range(nodes.n):
            status = self.filter(state, pod, self.handle.node_info(nodes, row))
            if status is not None and status.code != Code.SUCCESS:
                codes[row] = status.code
                ids[row] = len(reasons)
                reasons.append(status.reasons)
        return NodeVerdicts(codes, ids, lambda i: reasons[i])


class PerNodeScorePlugin(ScorePlugin):
    """Upstream-shaped Score: ``score(state, pod, node_info) -> int``, called once per node."""

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> int:
        raise NotImplementedError

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        assert self.handle is not None
        return np.fromiter(
            (self.score(state, pod, self.handle.node_info(nodes, int(r))) for r in rows), np.int64, len(rows)
        )
