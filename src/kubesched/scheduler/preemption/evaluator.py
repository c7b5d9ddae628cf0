"""The preemption evaluator (``framework/preemption/preemption.go`` Evaluator.Preempt, and
DefaultPreemption's SelectVictimsOnNode), vectorized over candidate nodes.

The dry run works on a copy of the candidate rows of the node table: every lower-priority pod
is taken off all of them at once (a scatter-add over the cache's pod table), nominated pods of
equal or higher priority are put on, and the filters run once over all rows — the nodes still
failing are out, with the status upstream would report. Then the reprieve walks victims by rank:
step k puts each node's k-th victim back (PDB-violating ones first, each group in importance
order) and runs the filters once over all rows; where the pod no longer fits, that victim stays
evicted. The number of filter passes is the largest number of victims on one node, not the
number of nodes.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interface import PostFilterResult
from kubesched.framework.status import Code, Status
from kubesched.scheduler.extender import ExtenderError
from kubesched.scheduler.framework.handle import Handle
from kubesched.scheduler.framework.types import NO_NODE_AVAILABLE, reasons_histogram
from kubesched.scheduler.nodesearch.nominated import add_to, nominated_slots
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.podtable import PodTable
from kubesched.scheduler.preemption.candidates import MAX_INT32, Candidate, CandidateColumns, pick_index, pick_one_node
from kubesched.scheduler.preemption.executor import Executor
from kubesched.scheduler.preemption.pdb import PDBInfo, pdb_infos, violating

if TYPE_CHECKING:
    from kubesched.scheduler.framework.runtime import Framework

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."


@dataclass(slots=True)
class PreemptionArgs:
    """DefaultPreemptionArgs (defaults 10 % / 100)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


def num_candidates(args: PreemptionArgs, num_nodes: int) -> int:
    """``calculateNumCandidates``: a share of the potential nodes, at least the absolute floor."""
    n = num_nodes * args.min_candidate_nodes_percentage // 100
    return min(max(n, args.min_candidate_nodes_absolute), num_nodes)


def is_preemption_victim_terminating(pod: PodInfo) -> bool:
    """A pod being deleted because the scheduler preempted it (DisruptionTarget condition)."""
    if not pod.deleting:
        return False
    for c in (pod.obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "DisruptionTarget" and c.get("status") == "True":
            return c.get("reason") == "PreemptionByScheduler"
    return False


@dataclass(slots=True)
class _Victims:
    """Lower-priority pods on a set of rows: pod-table slots, their row in the dry-run table."""

    slots: np.ndarray
    rows: np.ndarray


@dataclass(slots=True)
class _Found:
    """Candidates of a dry run as columns: their rows, the criteria, and the evicted victims
    (pod-table slots in importance order, each with its candidate index and PDB violation)."""

    rows: np.ndarray
    columns: CandidateColumns
    victim_slots: np.ndarray
    victim_of: np.ndarray
    victim_violates: np.ndarray

    def head(self, k: int) -> _Found:
        keep = self.victim_of < k
        cols = self.columns.take(slice(k))
        return _Found(self.rows[:k], cols, self.victim_slots[keep], self.victim_of[keep], self.victim_violates[keep])

    def reorder(self, order: np.ndarray) -> _Found:
        cols = self.columns.take(order)
        where = np.empty(len(order), np.int64)
        where[order] = np.arange(len(order))
        return _Found(self.rows[order], cols, self.victim_slots, where[self.victim_of], self.victim_violates)

    @staticmethod
    def concat(parts: list[_Found]) -> _Found:
        offsets = np.cumsum([0] + [len(p.rows) for p in parts[:-1]])
        cols = CandidateColumns(
            *(np.concatenate([getattr(p.columns, f) for p in parts]) for f in CandidateColumns.__slots__)
        )
        return _Found(
            np.concatenate([p.rows for p in parts]),
            cols,
            np.concatenate([p.victim_slots for p in parts]),
            np.concatenate([p.victim_of + o for p, o in zip(parts, offsets, strict=True)]),
            np.concatenate([p.victim_violates for p in parts]),
        )

    def candidate(self, i: int, nodes: NodeTable, pt: PodTable) -> Candidate:
        mine = self.victim_of == i
        slots = self.victim_slots[mine].tolist()
        row = int(self.rows[i])
        victims = [pt.pods[s] for s in slots]
        return Candidate(
            nodes.names[row],
            row,
            victims,
            [float(pt.start[s]) for s in slots],
            int(self.columns.violations[i]),
        )


class UniformStatuses(Mapping[int, Status]):
    """The same Status for every row of ``rows`` (a dry run that finds no victims anywhere), without
    a Python object per node."""

    def __init__(self, rows: np.ndarray, status: Status) -> None:
        self.rows = rows
        self.status = status

    def __getitem__(self, row: int) -> Status:
        if row not in set(self.rows.tolist()):
            raise KeyError(row)
        return self.status

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def __len__(self) -> int:
        return len(self.rows)


class Evaluator:
    def __init__(
        self, fwk: Framework, handle: Handle, args: PreemptionArgs, rng: random.Random, executor: Executor
    ) -> None:
        self.fwk = fwk
        self.handle = handle
        self.args = args
        self.rng = rng
        self.executor = executor

    # -- Preempt -----------------------------------------------------------------------------
    def preempt(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> tuple[PostFilterResult | None, Status]:
        nodes: NodeTable = self.handle.cache.table
        metrics = self.handle.metrics
        if metrics is not None:  # DefaultPreemption's PostFilter counts every attempt
            metrics.preemption_attempts.inc()
        ok, msg = self.eligible(pod, diagnosis, nodes)
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, (msg,))
        pdbs = pdb_infos(self.handle.client.list("PodDisruptionBudget")[0])
        found, statuses = self.find_candidates(state, pod, diagnosis, nodes, pdbs)
        if found is None:
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, (self._no_candidates_message(nodes.n, statuses),))
        preempters = [e for e in self.handle.extenders if e.supports_preemption() and e.is_interested(pod)]
        if preempters:
            pt = self.handle.cache.pod_table
            candidates, st = self.call_extenders(pod, [found.candidate(i, nodes, pt) for i in range(len(found.rows))])
            if st is not None:
                return None, st
            chosen = pick_one_node(candidates, self.handle.clock.now())
            if chosen is None:
                return None, Status(Code.UNSCHEDULABLE, ("no candidate node for preemption",))
            best = chosen
        else:
            best = found.candidate(pick_index(found.columns), nodes, self.handle.cache.pod_table)
        if metrics is not None:
            metrics.preemption_victims.observe(len(best.victims))
        self.executor.prepare_async(best, pod)
        # v1.37 says where and how many on success too; the FitError message carries it
        # (framework/preemption/preemption.go, Preempt)
        placement = f"found a potential placement for pod on node {best.node}, preempting {len(best.victims)} victims"
        return PostFilterResult(best.node), Status(Code.SUCCESS, (placement,))

    def _cached_pod(self, uid: str) -> PodInfo:
        """A pod the cache holds (the extenders named it among a node's pods)."""
        found = self.handle.cache.pod(uid)
        assert found is not None, uid
        return found[0]

    def call_extenders(self, pod: PodInfo, candidates: list[Candidate]) -> tuple[list[Candidate], Status | None]:
        """``callExtenders``: each interested preempting extender may drop nodes or change their
        victims; the next one sees what the previous one left."""
        known = {v.uid: (v, t) for c in candidates for v, t in zip(c.victims, c.start_times, strict=True)}
        victims = {c.node: ([v.obj for v in c.victims], c.num_pdb_violations) for c in candidates}
        for ext in self.handle.extenders:
            if not victims:
                break
            if not ext.supports_preemption() or not ext.is_interested(pod):
                continue
            try:
                answer = ext.process_preemption(pod, victims)
            except ExtenderError as err:
                if ext.cfg.ignorable:
                    continue
                return [], Status.error(str(err))
            new: dict[str, tuple[list[dict[str, Any]], int]] = {}
            for node, (uids, violations) in answer.items():
                if not uids:
                    if ext.cfg.ignorable:
                        continue
                    return [], Status.error(f'expected at least one victim pod on node "{node}"')
                if node not in self.handle.cache.table.index:
                    return [], Status.error(
                        f'extender: {ext.name} claims to preempt on node "{node}", which is unknown'
                    )
                on_node = {p.uid: p for p in self.handle.cache.pods_on(node)}
                pods = []
                for uid in uids:
                    if uid not in on_node:
                        return [], Status.error(
                            f"extender: {ext.name} claims to preempt pod (UID: {uid}) on node: {node}, "
                            "but the pod is not found on that node"
                        )
                    pods.append(on_node[uid].obj)
                new[node] = (pods, violations)
            victims = new
        out = []
        index = self.handle.cache.table.index
        for node, (pods, violations) in victims.items():
            infos = [self._cached_pod(p["metadata"]["uid"]) for p in pods]
            starts = [known.get(p.uid, (p, math.nan))[1] for p in infos]
            out.append(Candidate(node, index[node], infos, starts, violations))
        return out, None

    def eligible(self, pod: PodInfo, diagnosis: Diagnosis, nodes: NodeTable) -> tuple[bool, str]:
        """``PodEligibleToPreemptOthers``."""
        if pod.preemption_policy == "Never":
            return False, NEVER
        nominated = pod.nominated_node_name
        if nominated and nominated in nodes.index:
            st = diagnosis.status_of(nodes.index[nominated])
            if st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            for other in self.handle.cache.pods_on(nominated):
                if other.priority < pod.priority and is_preemption_victim_terminating(other):
                    return False, TERMINATING
        return True, ""

    @staticmethod
    def _no_candidates_message(num_nodes: int, statuses: Mapping[int, Status]) -> str:
        counts: Counter[str] = Counter()
        if isinstance(statuses, UniformStatuses):  # one status for every potential node: counted at once
            for r in statuses.status.reasons if len(statuses) else ():
                counts[r] += len(statuses)
        else:
            for st in statuses.values():
                for r in st.reasons:
                    counts[r] += 1
        if num_nodes > len(statuses):
            counts[NOT_HELPFUL] += num_nodes - len(statuses)
        return f"{NO_NODE_AVAILABLE.format(num_nodes)}: {reasons_histogram(counts)}."

    # -- findCandidates / DryRunPreemption ------------------------------------------------------
    def find_candidates(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis, nodes: NodeTable, pdbs: Sequence[PDBInfo]
    ) -> tuple[_Found | None, Mapping[int, Status]]:
        """DryRunPreemption from a random offset; None (and each potential node's status) when
        no node can be made to fit."""
        potential = diagnosis.rows_with_code(Code.UNSCHEDULABLE)
        if len(potential) == 0:
            return None, {}
        offset = self.rng.randrange(len(potential))
        potential = np.concatenate([potential[offset:], potential[:offset]])
        want = num_candidates(self.args, len(potential))
        if not self.handle.cache.pod_table.any_lower_priority(pod.priority):
            # no pod anywhere below this one: SelectVictimsOnNode finds no victims on any node
            # before any filter runs, so every potential node gets that status at once
            return None, UniformStatuses(potential, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,)))

        # Chunks of potential nodes in offset order, each on one what-if table without its
        # lower-priority pods: who fits at all, then the reprieve on those; stop once there are
        # `want` candidates and at least one violates no budget.
        parts: list[_Found] = []
        misses: list[tuple[np.ndarray, np.ndarray, NodeTable, Any]] = []
        total = non_violating = 0
        pos = 0
        # taking victims off many nodes at once is upstream's node-by-node dry run only while every
        # active filter judges a node by its own pods; a topology-wide one (affinity, spreading)
        # must see every other node's pods in place: then one node at a time
        cross = any(getattr(p, "cross_node", True) and p.name not in state.skip_filter for p in self.fwk.filters)
        chunk = 1 if cross else max(want, 256)
        while pos < len(potential) and (non_violating == 0 or total < want):
            rows = potential[pos : pos + chunk]
            pos += len(rows)
            sub, sub_state, victims = self._without_victims(state, pod, nodes, rows)
            has_victims = np.bincount(victims.rows, minlength=len(rows)) > 0
            outcome = self.fwk.run_filters(sub_state, pod, sub)
            fits = outcome.codes == 0 if outcome.error is None else np.zeros(len(rows), bool)
            ok = has_victims & fits
            if not ok.all():
                misses.append((rows, has_victims, sub, outcome))
            if not ok.any():
                continue
            part = self._reprieve(sub, sub_state, pod, rows, victims, ok, pdbs)
            good = np.cumsum(part.columns.violations == 0) + non_violating
            enough = np.flatnonzero((good > 0) & (np.arange(1, len(part.rows) + 1) + total >= want))
            if len(enough):
                part = part.head(int(enough[0]) + 1)
            parts.append(part)
            total += len(part.rows)
            non_violating += int(np.count_nonzero(part.columns.violations == 0))
        if not parts:  # every potential node was examined: their statuses make the message
            statuses: dict[int, Status] = {}
            for rows, has_victims, sub, outcome in misses:
                diag = outcome.diagnosis(sub.names, self.fwk.filter_names)
                for i, row in enumerate(rows.tolist()):
                    if not has_victims[i]:
                        statuses[row] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,))
                    else:
                        st = diag.status_of(i)
                        statuses[row] = st if st is not None else Status(Code.UNSCHEDULABLE)
            return None, statuses
        found = _Found.concat(parts)
        # upstream lists the candidates that violate no budget first
        return found.reorder(np.argsort(found.columns.violations > 0, kind="stable")), {}

    def _without_victims(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: np.ndarray
    ) -> tuple[NodeTable, CycleState, _Victims]:
        """A copy of ``rows`` with the pods below ``pod``'s priority removed and the nominated
        pods of equal or higher priority added, and the PreFilter state updated to match."""
        sub = nodes.take(rows)
        sub_state = state.clone()
        pt: PodTable = self.handle.cache.pod_table
        pos = np.full(nodes.n, -1, np.int64)
        pos[rows] = np.arange(len(rows))
        slots = pt.lower_priority(pod.priority)
        sub_rows = pos[pt.node_row[slots]]
        keep = sub_rows >= 0
        victims = _Victims(slots[keep], sub_rows[keep])
        self._account(sub, sub_state, pod, victims, -1)
        table = self.handle.cache.nominated_table
        in_rows = np.zeros(nodes.n, bool)
        in_rows[rows] = True
        slots = nominated_slots(table, pod, in_rows)
        add_to(sub, pos[table.node_row[slots]], table, slots, self.fwk, sub_state, pod)
        return sub, sub_state, victims

    def _account(self, sub: NodeTable, sub_state: CycleState, pod: PodInfo, v: _Victims, sign: int) -> None:
        add_to(sub, v.rows, self.handle.cache.pod_table, v.slots, self.fwk, sub_state, pod, sign)

    def _passes(self, st: CycleState, pod: PodInfo, sub: NodeTable) -> np.ndarray:
        # only ever on rows that passed with every lower-priority pod removed
        outcome = self.fwk.run_filters(st, pod, sub, passed_before=True)
        if outcome.error is not None:
            return np.zeros(sub.n, bool)
        return outcome.codes == 0

    def _reprieve(
        self,
        sub: NodeTable,
        sub_state: CycleState,
        pod: PodInfo,
        rows: np.ndarray,
        v: _Victims,
        ok: np.ndarray,
        pdbs: Sequence[PDBInfo],
    ) -> _Found:
        """``SelectVictimsOnNode`` on every row of ``sub`` where ``ok`` (the pod fits without the
        lower-priority pods), in order; the candidates are ``rows[ok]``."""
        index = np.cumsum(ok) - 1  # sub row → candidate number
        mine = ok[v.rows]
        v = _Victims(v.slots[mine], v.rows[mine])
        pt: PodTable = self.handle.cache.pod_table
        now = self.handle.clock.now()
        start = np.where(np.isnan(pt.start[v.slots]), now, pt.start[v.slots])
        prio = pt.priority[v.slots]
        # importance order per node: priority high → low, then earlier start first
        order = np.lexsort((start, -prio, v.rows))
        slots, srows = v.slots[order], v.rows[order]
        viol = np.zeros(len(slots), bool)
        if pdbs:
            pods: list[PodInfo] = [pt.pods[s] for s in slots.tolist()]
            bounds = np.flatnonzero(np.diff(srows)) + 1
            for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(slots)], strict=True):
                viol[lo:hi] = violating(pods[lo:hi], pdbs)
        # reprieve order: violating first, then the rest, each keeping importance order
        reprieve = np.lexsort((np.arange(len(slots)), ~viol, srows))
        rank = np.zeros(len(slots), np.int64)
        if len(slots):
            first = np.r_[0, np.flatnonzero(np.diff(srows[reprieve])) + 1]
            group_start = np.repeat(first, np.diff(np.r_[first, len(slots)]))
            rank[reprieve] = np.arange(len(slots)) - group_start
        evicted = np.zeros(len(slots), bool)
        for k in range(int(rank.max()) + 1 if len(slots) else 0):
            step = np.flatnonzero(rank == k)
            back = _Victims(slots[step], srows[step])
            self._account(sub, sub_state, pod, back, +1)
            fails = ~self._passes(sub_state, pod, sub)[srows[step]]
            if fails.any():
                again = step[fails]
                self._account(sub, sub_state, pod, _Victims(slots[again], srows[again]), -1)
                evicted[again] = True
        m = int(ok.sum())
        ev_rows, ev_prio = index[srows[evicted]], prio[order][evicted]
        count = np.bincount(ev_rows, minlength=m)
        top = np.full(m, np.iinfo(np.int64).min, np.int64)
        np.maximum.at(top, ev_rows, ev_prio)
        is_top = ev_prio == top[ev_rows]
        earliest = np.full(m, np.inf)
        np.minimum.at(earliest, ev_rows[is_top], start[order][evicted][is_top])
        offset_sum = np.zeros(m, np.int64)
        np.add.at(offset_sum, ev_rows, ev_prio + MAX_INT32 + 1)
        columns = CandidateColumns(
            np.bincount(ev_rows, weights=viol[evicted], minlength=m).astype(np.int64),
            count,
            np.where(count > 0, top, 0),
            offset_sum,
            np.where(count > 0, earliest, -np.inf),
        )
        return _Found(rows[ok], columns, slots[evicted], ev_rows, viol[evicted])
