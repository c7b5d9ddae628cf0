"""Each extension point's plugins with the method the runtime calls on each, bound once when
the profile is built. A cycle whose plugin calls are watched from outside (sampled plugin
metrics, the attempt's results, as kube-scheduler-simulator wraps every plugin) gets the same
lists with each call timed and handed to the observer (the lists are built once; the cycle's
observer is set on their relay), so the runtime has one path per point. An unwatched cycle's
lists replay PreFilter and PreScore outcomes for pods of one template (the template memo,
``memoised``): the third strategy behind the same lists, chosen with the others in
``Framework.calls``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from time import perf_counter
from typing import Any, TypeVar

from kubesched.api.pod import PodInfo
from kubesched.framework.interface import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.framework.template_memo import PointMemo, Templates, Whole

# (plugin, extension point, the call's arguments, what it returned, seconds)
PluginObserver = Callable[[str, str, tuple[Any, ...], Any, float], None]

P = TypeVar("P")
Calls = list[tuple[P, Callable[..., Any]]]
# a point's outcome replayed whole for this pod (PreFilter's, PreScore's), or None: call the list
WholeReplay = Callable[[PodInfo, NodeTableView], Whole | None]


def no_whole(pod: PodInfo, nodes: NodeTableView) -> Whole | None:
    """The plain and watched calls replay no point whole."""
    return None


class ObserverRelay:
    """The observer of the cycle being run, set by the runtime before it calls a point's plugins,
    so that the watched lists are built once per profile, not once per cycle."""

    __slots__ = ("target",)

    def __init__(self) -> None:
        self.target: PluginObserver | None = None


def relayed(relay: ObserverRelay, plugin: str, point: str, fn: Callable[..., Any], *args: Any) -> Any:
    """One plugin call of a watched cycle, given to the observer that was the relay's when the
    call began (a nested cycle may set another meanwhile)."""
    target = relay.target
    started = perf_counter()
    ret = fn(*args)
    if target is not None:
        target(plugin, point, args, ret, perf_counter() - started)
    return ret


def both(first: PluginObserver, second: PluginObserver) -> PluginObserver:
    """Two observers of one cycle, in turn."""

    def observe(plugin: str, point: str, args: tuple[Any, ...], ret: Any, seconds: float) -> None:
        first(plugin, point, args, ret, seconds)
        second(plugin, point, args, ret, seconds)

    return observe


def _bound(plugins: Sequence[Any], method: str) -> list[tuple[Any, Callable[..., Any]]]:
    return [(p, getattr(p, method)) for p in plugins]


def _watched(calls: list[tuple[Any, Callable[..., Any]]], relay: ObserverRelay, point: str) -> list[Any]:
    return [(p, partial(relayed, relay, p.name, point, call)) for p, call in calls]


class PointCalls:
    """The calls of every extension point a cycle runs, in the profile's order. ``score``
    carries each Score plugin's weight and whether its class has a NormalizeScore; ``unreserve``
    is Reserve's list reversed, as upstream unreserves. ``pre_filter_whole`` and
    ``pre_score_whole``, asked before their point's list is called, answer with the point's
    outcome when it is replayed whole (``memoised``)."""

    pre_filter: Calls[PreFilterPlugin]
    filter: Calls[FilterPlugin]
    post_filter: Calls[PostFilterPlugin]
    pre_score: Calls[PreScorePlugin]
    score: list[tuple[ScorePlugin, int, bool, Callable[..., Any]]]
    reserve: Calls[ReservePlugin]
    unreserve: Calls[ReservePlugin]
    permit: Calls[PermitPlugin]
    pre_bind: Calls[PreBindPlugin]
    bind: Calls[BindPlugin]
    post_bind: Calls[PostBindPlugin]
    pre_filter_whole: WholeReplay
    pre_score_whole: WholeReplay

    def __init__(
        self,
        pre_filter: Calls[PreFilterPlugin],
        filter: Calls[FilterPlugin],
        post_filter: Calls[PostFilterPlugin],
        pre_score: Calls[PreScorePlugin],
        score: list[tuple[ScorePlugin, int, bool, Callable[..., Any]]],
        reserve: Calls[ReservePlugin],
        unreserve: Calls[ReservePlugin],
        permit: Calls[PermitPlugin],
        pre_bind: Calls[PreBindPlugin],
        bind: Calls[BindPlugin],
        post_bind: Calls[PostBindPlugin],
        pre_filter_whole: WholeReplay = no_whole,
        pre_score_whole: WholeReplay = no_whole,
    ) -> None:
        self.pre_filter = pre_filter
        self.filter = filter
        self.post_filter = post_filter
        self.pre_score = pre_score
        self.score = score
        self.reserve = reserve
        self.unreserve = unreserve
        self.permit = permit
        self.pre_bind = pre_bind
        self.bind = bind
        self.post_bind = post_bind
        self.pre_filter_whole = pre_filter_whole
        self.pre_score_whole = pre_score_whole

    @classmethod
    def bind_methods(
        cls,
        pre_filter: Sequence[PreFilterPlugin],
        filters: Sequence[FilterPlugin],
        post_filter: Sequence[PostFilterPlugin],
        pre_score: Sequence[PreScorePlugin],
        score: Sequence[tuple[ScorePlugin, int, bool]],
        reserve: Sequence[ReservePlugin],
        permit: Sequence[PermitPlugin],
        pre_bind: Sequence[PreBindPlugin],
        bind: Sequence[BindPlugin],
        post_bind: Sequence[PostBindPlugin],
    ) -> PointCalls:
        """The unwatched calls: each plugin's own method."""
        return cls(
            _bound(pre_filter, "pre_filter"),
            _bound(filters, "filter_nodes"),
            _bound(post_filter, "post_filter"),
            _bound(pre_score, "pre_score"),
            [(p, weight, normalizes, p.score_nodes) for p, weight, normalizes in score],
            _bound(reserve, "reserve"),
            _bound(list(reversed(reserve)), "unreserve"),
            _bound(permit, "permit"),
            _bound(pre_bind, "pre_bind"),
            _bound(bind, "bind"),
            _bound(post_bind, "post_bind"),
        )

    def watched(self, relay: ObserverRelay) -> PointCalls:
        """The same calls, each timed and handed to the relay's observer."""
        return PointCalls(
            _watched(self.pre_filter, relay, "PreFilter"),
            _watched(self.filter, relay, "Filter"),
            _watched(self.post_filter, relay, "PostFilter"),
            _watched(self.pre_score, relay, "PreScore"),
            [(p, w, n, partial(relayed, relay, p.name, "Score", call)) for p, w, n, call in self.score],
            _watched(self.reserve, relay, "Reserve"),
            _watched(self.unreserve, relay, "Unreserve"),
            _watched(self.permit, relay, "Permit"),
            _watched(self.pre_bind, relay, "PreBind"),
            _watched(self.bind, relay, "Bind"),
            _watched(self.post_bind, relay, "PostBind"),
        )


def memoised(
    calls: PointCalls, templates: Templates, pre_filter: PointMemo | None, pre_score: PointMemo | None
) -> PointCalls:
    """The unwatched calls with the template memo (``template_memo.py``): each point asked
    whether its outcome is replayed whole for the pod's template, and each plugin that declares a
    ``Memo`` called through its point's memo (replayed, or called and recorded)."""
    if pre_filter is None and pre_score is None:
        return calls
    return PointCalls(
        _through_memo(calls.pre_filter, pre_filter),
        calls.filter,
        calls.post_filter,
        _through_memo(calls.pre_score, pre_score),
        calls.score,
        calls.reserve,
        calls.unreserve,
        calls.permit,
        calls.pre_bind,
        calls.bind,
        calls.post_bind,
        no_whole if pre_filter is None else partial(pre_filter.whole, templates),
        no_whole if pre_score is None else partial(pre_score.whole, templates),
    )


def _through_memo(calls: Calls[P], memo: PointMemo | None) -> Calls[P]:
    if memo is None:
        return calls
    return [(p, call if memo.memos[i] is None else partial(memo.call_at, i, call)) for i, (p, call) in enumerate(calls)]
