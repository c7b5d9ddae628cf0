"""Opportunistic Batching (KEP-5598; ``pkg/scheduler/framework/runtime/batch.go``).

After a pod of some signature is scheduled by scoring many nodes, the nodes it did not take stay
sorted, best first. When the next pod has the same signature and the node the previous pod took
no longer fits it (1-pod-per-node workloads: whole-node GPU jobs), nothing else changed for the
other nodes, so the next node in that list is the best for this pod too: it is offered as a hint
and, if it passes the filters, taken without a search or scoring. The list is dropped when a pod
of another signature or profile comes between, the previous pod failed, its node still fits,
the list runs out, or it is older than ``MAX_BATCH_AGE`` on the scheduler's clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_BATCH_AGE = 0.5  # maxBatchAge: 500ms

# metrics.BatchAttempt* (label "result" of scheduler_batch_attempts_total)
ATTEMPT_NO_HINT = "no_hint"
ATTEMPT_HINT_USED = "hint_used"
ATTEMPT_HINT_NOT_USED = "hint_not_used"

# metrics.BatchFlush* (label "reason" of scheduler_batch_cache_flushed_total)
FLUSH_POD_FAILED = "pod_failed"
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_NODE_NOT_FULL = "node_not_full"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_EXPIRED = "expired"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"

PodSignature = tuple[tuple[str, Any], ...]


class SortedNodes:
    """``framework.SortedScoredNodes``: node names best first, popped from the front. Given
    ``rows``, the list is ``names[rows[i]]``, looked up only as it is popped."""

    __slots__ = ("_names", "_next", "_rows")

    @classmethod
    def unlisted(cls, count: int) -> SortedNodes:
        """``count`` nodes left unsorted: what an unsigned pod leaves, which no pod can use."""
        return cls(range(count))  # type: ignore[arg-type]  # only its length is read

    def __init__(self, names: Sequence[str], rows: np.ndarray | None = None) -> None:
        self._names = names
        self._rows = rows
        self._next = 0

    def pop(self) -> str:
        i = self._next
        self._next += 1
        return self._names[i] if self._rows is None else self._names[int(self._rows[i])]

    def __len__(self) -> int:
        return (len(self._names) if self._rows is None else len(self._rows)) - self._next


@dataclass(slots=True)
class _BatchState:
    signature: PodSignature
    sorted_nodes: SortedNodes
    creation_time: float


@dataclass(init=False, slots=True)
class _Cycle:
    cycle_count: int = -1
    chosen_node: str = ""
    succeeded: bool = False

    def __init__(self, cycle_count: int = -1, chosen_node: str = "", succeeded: bool = False) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.cycle_count = cycle_count
        self.chosen_node = chosen_node
        self.succeeded = succeeded


class OpportunisticBatch:
    """One profile's batch (upstream keeps one per framework)."""

    def __init__(
        self,
        profile: str,
        now: Callable[[], float],
        count: Callable[[str, str, str], None] | None = None,
    ) -> None:
        """``now``: the scheduler's clock (the virtual one in simulations). ``count(metric,
        profile, label)`` records ``batch_attempts_total`` / ``batch_cache_flushed_total``."""
        self.profile = profile
        self.now = now
        self.count = count
        self.state: _BatchState | None = None
        self.last_cycle = _Cycle()
        self.batched_pods = 0  # pods placed on a hint (upstream counts them for its tests)

    def _record(self, metric: str, label: str) -> None:
        if self.count is not None:
            self.count(metric, self.profile, label)

    def _flush(self, reason: str) -> None:
        if self.count is not None:
            self.count("flushed", self.profile, reason)

    def get_node_hint(
        self,
        signature: PodSignature | None,
        cycle_count: int,
        node_exists: Callable[[str], bool],
        rejects: Callable[[str], bool],
    ) -> str:
        """``GetNodeHint``: the next node of the stored list when it is usable for the pod of this
        ``signature``, else "". ``rejects(node)``: the Filter plugins reject the pod on that node
        (RunFilterPlugins)."""
        if not self._compatible(signature, cycle_count, node_exists, rejects):
            self._record("attempts", ATTEMPT_NO_HINT)
            return ""
        assert self.state is not None
        return self.state.sorted_nodes.pop()

    def store_schedule_results(
        self,
        signature: PodSignature | None,
        hinted_node: str,
        chosen_node: str,
        other_nodes: SortedNodes | None,
        cycle_count: int,
    ) -> None:
        """``StoreScheduleResults``: remember this cycle; keep the nodes the pod did not take as
        the new list unless the pod took the hint (the list is already one shorter)."""
        self.last_cycle = _Cycle(cycle_count, chosen_node, True)
        if hinted_node and hinted_node == chosen_node:
            self._record("attempts", ATTEMPT_HINT_USED)
            self.batched_pods += 1
            return
        if hinted_node:
            self._record("attempts", ATTEMPT_HINT_NOT_USED)
        if signature is not None and other_nodes is not None and len(other_nodes) > 0:
            self.state = _BatchState(signature, other_nodes, self.now())
            return
        self._flush(FLUSH_EMPTY_LIST if other_nodes is None or len(other_nodes) == 0 else FLUSH_POD_NOT_BATCHABLE)
        self.state = None

    def _compatible(
        self,
        signature: PodSignature | None,
        cycle_count: int,
        node_exists: Callable[[str], bool],
        rejects: Callable[[str], bool],
    ) -> bool:
        """``batchStateCompatible``, its checks in upstream's order."""
        state = self.state
        if state is None or len(state.sorted_nodes) == 0:
            return False
        if cycle_count != self.last_cycle.cycle_count + 1:  # another pod (maybe another profile's) came between
            self._flush(FLUSH_POD_SKIPPED)
            return False
        if not self.last_cycle.succeeded:
            self._flush(FLUSH_POD_FAILED)
            return False
        if signature is None or signature != state.signature:
            self._flush(FLUSH_POD_INCOMPATIBLE)
            return False
        if self.now() > state.creation_time + MAX_BATCH_AGE:
            self._flush(FLUSH_EXPIRED)
            return False
        # the list is only right if the previous pod's node cannot take this one: were it still
        # feasible, its new score could put it anywhere in the list
        chosen = self.last_cycle.chosen_node
        if not node_exists(chosen):
            self._flush(FLUSH_NODE_MISSING)
            return False
        if not rejects(chosen):
            self._flush(FLUSH_NODE_NOT_FULL)
            return False
        return True
