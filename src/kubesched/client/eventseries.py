"""Event series: how client-go's events broadcaster (``tools/events/event_broadcaster.go``)
folds repeated events into one.

Two events are isomorphic when their type, action, reason, reportingController,
reportingInstance, regarding and related references are equal (``getKey``; the note is not
part of the key). The first is created. The second, within the cache's lifetime, turns the
cached event into a series and is written as a PATCH of ``series: {count: 2,
lastObservedTime}`` (created instead when the PATCH finds no event). Later ones only count in
memory. Two rounds write what memory holds: every 30 minutes every series is written again
(``refreshExistingEventSeries``), and every 6 minutes a series not observed for 6 minutes is
written one last time and forgotten, as is a singleton older than 6 minutes (``finishSeries``).

``EventSeriesCache`` holds only that bookkeeping, with the time passed in, so the in-process
client (a virtual clock) and the remote client's event writer share it; each does its own
writing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from kubesched.clock import rfc3339_micro

FINISH_TIME = 6 * 60.0  # tools/events: finishTime
REFRESH_TIME = 30 * 60.0  # tools/events: refreshTime

Key = tuple[Any, ...]


def event_key(event: dict[str, Any]) -> Key:
    """``getKey``: what makes two events.k8s.io/v1 Events isomorphic. A reference's fields are
    taken in order: every reference here is built by ``cluster.events.reference``."""
    related = event.get("related")
    return (
        event.get("type"),
        event.get("action"),
        event.get("reason"),
        event.get("reportingController"),
        event.get("reportingInstance"),
        tuple(event["regarding"].values()),
        tuple(related.values()) if related else (),
    )


def series_patch(event: dict[str, Any]) -> dict[str, Any]:
    """The strategic merge patch the broadcaster sends for a series: the event against itself
    without ``series`` differs only there."""
    return {"series": dict(event["series"])}


def _copy(event: dict[str, Any]) -> dict[str, Any]:
    """A copy a writer may change at the top and in ``metadata`` (a store sets its uid and
    resourceVersion there); the references and the series are never changed in place."""
    return {**event, "metadata": dict(event.get("metadata") or {})}


@dataclass(frozen=True)
class Due:
    """A write one of the periodic rounds owes: ``event`` (with its series) as it stands."""

    key: Key
    event: dict[str, Any]
    finishing: bool
    observed: float  # when it was last seen


class EventSeriesCache:
    """The broadcaster's ``eventCache`` and its two rounds, thread-safe; times are seconds of the
    caller's clock (``kubesched.clock``)."""

    def __init__(self, now: float, finish_time: float = FINISH_TIME, refresh_time: float = REFRESH_TIME) -> None:
        self._cache: dict[Key, dict[str, Any]] = {}
        self._observed: dict[Key, float] = {}  # when the event or its series was last seen
        self._lock = threading.Lock()
        self.finish_time, self.refresh_time = finish_time, refresh_time
        self.next_finish = now + finish_time
        self.next_refresh = now + refresh_time

    def __len__(self) -> int:
        return len(self._cache)

    def observe(self, event: dict[str, Any], now: float) -> dict[str, Any] | None:
        """``recordToSink``: the event to write now (a copy: created when it has no ``series``,
        else PATCHed), or None when this occurrence only counts in memory."""
        key = event_key(event)
        with self._lock:
            cached = self._cache.get(key)
            self._observed[key] = now
            if cached is None:
                self._cache[key] = dict(event)
                return _copy(event)
            series = cached.get("series")
            # a series is replaced, never changed in place: a copy handed out stays as it was
            cached["series"] = {"count": series["count"] + 1 if series else 2, "lastObservedTime": rfc3339_micro(now)}
            return None if series else _copy(cached)

    def next_due(self) -> float:
        return min(self.next_finish, self.next_refresh)

    def due(self, now: float) -> list[Due]:
        """The writes of the rounds whose time has come (refresh before finish when both are).
        A finishing series leaves the cache here; ``restore`` puts it back when its write is to
        be tried again."""
        out: list[Due] = []
        with self._lock:
            if now >= self.next_refresh:
                self.next_refresh = now + self.refresh_time
                out += [Due(k, _copy(e), False, self._observed[k]) for k, e in self._cache.items() if e.get("series")]
            if now >= self.next_finish:
                self.next_finish = now + self.finish_time
                for key, ev in list(self._cache.items()):
                    last = self._observed[key]
                    if last > now - self.finish_time:
                        continue
                    del self._cache[key]
                    del self._observed[key]
                    if ev.get("series"):
                        out.append(Due(key, _copy(ev), True, last))
        return out

    def drain(self) -> list[Due]:
        """Every series, to be written one last time (the end of a simulation); the cache is
        left empty."""
        with self._lock:
            out = [Due(k, _copy(e), True, self._observed[k]) for k, e in self._cache.items() if e.get("series")]
            self._cache.clear()
            self._observed.clear()
        return out

    def restore(self, due: Due) -> None:
        """A finishing write that failed and may be tried again: the series stays cached (unless
        a new occurrence started another meanwhile), as ``finishSeries`` keeps it on ``retry``."""
        with self._lock:
            if due.key not in self._cache:
                self._cache[due.key] = due.event
                self._observed[due.key] = due.observed
