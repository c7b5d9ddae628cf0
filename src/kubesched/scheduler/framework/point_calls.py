"""Each extension point's plugins with the method the runtime calls on each, bound once when
the profile is built. A cycle whose plugin calls are watched from outside (sampled plugin
metrics, the attempt's results, as kube-scheduler-simulator wraps every plugin) gets the same
lists with each call timed and handed to the observer (the lists are built once; the cycle's
observer is set on their relay), so the runtime has one path per point."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from time import perf_counter
from typing import Any, TypeVar

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

# (plugin, extension point, the call's arguments, what it returned, seconds)
PluginObserver = Callable[[str, str, tuple[Any, ...], Any, float], None]

P = TypeVar("P")
Calls = list[tuple[P, Callable[..., Any]]]


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
    is Reserve's list reversed, as upstream unreserves."""

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
