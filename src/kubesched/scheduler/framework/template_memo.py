"""The template memo: PreFilter and PreScore outcomes replayed for the next pods of one template.

kubesched's own: upstream calls every PreFilter and PreScore plugin in every cycle. A workload's
pods mostly come from one template (a ReplicaSet's, a Job's, scheduler_perf's), and for them most
of those calls end the same way (ten of eleven PreFilter plugins Skip a plain pod). A plugin that
declares a ``Memo`` (``kubesched.framework.Memo``) promises that for pods of one template its outcome
(result, status, CycleState writes) is the same as long as its ``memo_guard(nodes)`` is; the
framework records the outcomes on a template's second pod and replays them for the next ones, in
the plugins' order, calling the undeclared plugins as before. The last ``MAX_TEMPLATES``
templates are remembered, so that pods of a few templates arriving interleaved (a trace's
shapes, several Deployments scaling at once) are replayed too. Decisions, statuses,
messages and metrics are the same with the memo as without it (tests/test_template_memo.py runs
random clusters and event sequences both ways). Cycles that time plugins for metrics or write
results on the pod call every plugin.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.pod import PodInfo, same_pod_spec_and_meta
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import Memo, Plugin, PreFilterResult
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status, is_success

# templates remembered (least recently met dropped first), and pods kept per request key to tell
# templates of equal requests apart
MAX_TEMPLATES = 256
MAX_PER_KEY = 4


def _same_template(a: PodInfo, b: PodInfo) -> bool:
    return a.obj is b.obj or (
        a.namespace == b.namespace
        and a.requests == b.requests
        and a.non_zero_cpu == b.non_zero_cpu
        and a.non_zero_memory == b.non_zero_memory
        and same_pod_spec_and_meta(a.obj, b.obj)
    )


class Templates:
    """Which template a pod belongs to: a number shared by pods of equal namespace, spec, labels,
    annotations, owners, deletion state and requests (an in-place resize makes the requests
    differ from the spec's), a new number for a pod of none of the last ``MAX_TEMPLATES``."""

    __slots__ = ("_known", "_last", "_last_number", "_next")

    def __init__(self) -> None:
        self._last: PodInfo | None = None
        self._last_number = 0
        self._next = 0
        # by the cheap part of a template (namespace, requests, labels, annotations): a pod of
        # each template and its number
        self._known: OrderedDict[Hashable, list[tuple[PodInfo, int]]] = OrderedDict()

    def of(self, pod: PodInfo) -> int:
        last = self._last
        if last is not None and _same_template(last, pod):
            return self._last_number
        # (the labels' and annotations' items in their order: the same template written in
        # another order only gets a number of its own)
        annotations = (pod.obj.get("metadata") or {}).get("annotations") or {}
        key = (
            pod.namespace,
            pod.non_zero_cpu,
            pod.non_zero_memory,
            tuple(pod.requests.items()),
            tuple(pod.labels.items()),
            tuple(annotations.items()),
        )
        try:
            known = self._known.get(key)
        except TypeError:  # an unhashable value where the API allows only strings: a template of its own
            self._next += 1
            self._last, self._last_number = pod, self._next
            return self._next
        if known is None:
            known = self._known[key] = []
            while len(self._known) > MAX_TEMPLATES:
                self._known.popitem(last=False)
        else:
            self._known.move_to_end(key)
            for seen, number in known:
                if _same_template(seen, pod):
                    self._last, self._last_number = pod, number
                    return number
        self._next += 1
        known.append((pod, self._next))
        if len(known) > MAX_PER_KEY:
            del known[0]
        self._last, self._last_number = pod, self._next
        return self._next


@dataclass(frozen=True, slots=True)
class Replay:
    """One plugin's recorded outcome: what it returned (its status apart, and whether it narrowed
    the nodes) and what it wrote into CycleState."""

    returned: Any
    status: Status | None
    narrows: bool
    writes: tuple[tuple[str, Any], ...]


# a plan entry: not seen yet for this key, call the plugin (its outcome is not replayed), replay
UNSEEN: None = None
LIVE = Replay(None, None, False, ())


@dataclass(frozen=True, slots=True)
class Whole:
    """A whole point replayed at once: every plugin's outcome is recorded, none narrows the
    nodes; the plugins that skipped and every write, in order."""

    skips: tuple[str, ...]
    writes: tuple[tuple[str, Any], ...]


@dataclass(slots=True)
class Plan:
    """What to do at the point for pods of one template under one set of guards: per plugin, in
    the point's order, an entry (``UNSEEN``, ``LIVE`` or a ``Replay``), and ``whole`` once every
    entry replays."""

    entries: list[Replay | None]
    whole: Whole | None = None


class PointMemo:
    """The memo of one extension point (PreFilter or PreScore) of one profile."""

    __slots__ = ("_guarded", "_guarded_at", "_kept", "_plan", "_plans", "_template", "memos", "names", "pair")

    def __init__(self, plugins: Sequence[Plugin], attr: str, *, pair: bool, field: str | None = None) -> None:
        self.names = tuple(p.name for p in plugins)
        self.memos: tuple[Memo | None, ...] = tuple(getattr(p, attr, None) for p in plugins)
        for name, m in zip(self.names, self.memos, strict=True):
            if m is not None and not isinstance(m, Memo):
                message = f'plugin "{name}": {attr} must be a kubesched.framework.Memo, not {type(m).__name__}'
                raise InputError(message, field=field)
        self.pair = pair  # the point returns (PreFilterResult, Status), not a Status alone
        guarded = [i for i, m in enumerate(self.memos) if m is not None and m.guarded]
        self._guarded = tuple(plugins[i] for i in guarded)
        self._guarded_at = tuple(guarded)  # their places in the point
        # per template met (Templates' numbers), the guards its plan was recorded under and the
        # plan; None: met once, no plan yet
        self._plans: OrderedDict[int, tuple[tuple[Any, ...], Plan] | None] = OrderedDict()
        self._template = 0  # the last pod's (Templates numbers from 1), its entry and plan
        self._kept: tuple[tuple[Any, ...], Plan] | None = None
        self._plan: Plan | None = None

    @staticmethod
    def for_plugins(plugins: Sequence[Plugin], attr: str, *, pair: bool, field: str | None = None) -> PointMemo | None:
        """The point's memo; None when no plugin of it declares one. A declaration that is not a
        ``Memo`` is an InputError at ``field`` (the profile's plugins)."""
        memo = PointMemo(plugins, attr, pair=pair, field=field)
        return memo if any(m is not None for m in memo.memos) else None

    def plan(self, template: int, nodes: NodeTableView) -> Plan | None:
        """The plan for a pod of ``template`` over ``nodes``. None for the first pod of a
        template, which calls every plugin without recording (a workload of pods all different
        pays for no guard and no recording); from the second on, the plan recorded under the
        guards as they are now, a new one when they changed."""
        if template != self._template:  # (pods of the previous pod's template skip the lookup)
            self._template = template
            plans = self._plans
            if template not in plans:
                plans[template] = None
                while len(plans) > MAX_TEMPLATES:
                    plans.popitem(last=False)
                self._kept = self._plan = None
                return None
            plans.move_to_end(template)
            self._kept = plans[template]
        kept = self._kept
        guards = tuple([p.memo_guard(nodes) for p in self._guarded])
        if kept is None:
            kept = (guards, Plan([UNSEEN if m is not None else LIVE for m in self.memos]))
            self._kept = self._plans[template] = kept
        elif guards != kept[0]:
            # only the plugins whose guard moved are recorded again: each outcome depends on
            # the template and its own plugin's guard alone
            plan = kept[1]
            for at, before, now in zip(self._guarded_at, kept[0], guards, strict=True):
                if before != now:
                    plan.entries[at] = UNSEEN
            plan.whole = None
            kept = (guards, plan)
            self._kept = self._plans[template] = kept
        self._plan = kept[1]
        return self._plan

    def whole(self, templates: Templates, pod: PodInfo, nodes: NodeTableView) -> Whole | None:
        """The point's outcome for ``pod`` when every plugin's is replayed, else None (and the
        point's plugins are called through ``call_at``, under the plan this sets)."""
        plan = self.plan(templates.of(pod), nodes)
        return None if plan is None else plan.whole

    def current(self) -> Plan | None:
        """The plan of the last pod asked for."""
        return self._plan

    def replaying(self) -> bool:
        """Whether the last pod's template has every plugin's outcome recorded."""
        return self._plan is not None and self._plan.whole is not None

    def call_at(self, i: int, method: Callable[..., Any], state: CycleState, pod: PodInfo, *rest: Any) -> Any:
        """Plugin ``i``'s ``method(state, pod, *rest)`` under the plan of the pod whose point is
        running (``whole`` set it; the point's loop runs no other pod's point meanwhile)."""
        plan = self._plan
        if plan is None:
            return method(state, pod, *rest)
        return self.call(plan, i, pod, state, method, state, pod, *rest)

    def call(self, plan: Plan, i: int, pod: PodInfo, state: CycleState, method: Callable[..., Any], *args: Any) -> Any:
        """What plugin ``i``'s ``method(*args)`` returns for ``pod``: replayed from ``plan`` (its
        writes into ``state`` too), or called, and recorded when the plan has not seen it yet."""
        rec = plan.entries[i]
        if rec is LIVE:
            return method(*args)
        if rec is not None:
            state.replay(rec.writes)
            return rec.returned
        before = state.snapshot()
        returned = method(*args)
        self._record(plan, i, pod, returned, state.written_since(before))
        return returned

    def _record(
        self, plan: Plan, i: int, pod: PodInfo, returned: Any, writes: tuple[tuple[str, Any], ...] | None
    ) -> None:
        """Keep plugin ``i``'s outcome in ``plan`` when its memo allows replaying it (a success
        or a Skip, with every write known); otherwise it is called from now on."""
        memo = self.memos[i]
        result: PreFilterResult | None = returned[0] if self.pair else None
        status: Status | None = returned[1] if self.pair else returned
        skip = status is not None and status.code == Code.SKIP
        if (
            memo is None
            or writes is None
            or not (skip or is_success(status))
            or (memo.skip_only and not skip)
            or (memo.when is not None and not memo.when(pod))
        ):
            plan.entries[i] = LIVE
            return
        plan.entries[i] = Replay(returned, status, result is not None and not result.all_nodes(), writes)
        recorded = [e for e in plan.entries if e is not None and e is not LIVE]
        if len(recorded) == len(plan.entries) and not any(e.narrows for e in recorded):
            skips = tuple(
                name
                for name, e in zip(self.names, recorded, strict=True)
                if e.status is not None and e.status.code == Code.SKIP
            )
            plan.whole = Whole(skips, tuple(w for e in recorded for w in e.writes))
