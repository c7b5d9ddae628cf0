"""Watch events and the watch a consumer drains (apimachinery ``pkg/watch``): what every
ClusterClient, the store and the API server pass around, independent of where events come from."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

# whether an object is in a watcher's selection (its label and field selectors)
Selection = Callable[[dict[str, Any]], bool]


def selected_type(ev_type: str, obj: dict[str, Any], old: dict[str, Any] | None, selects: Selection) -> str | None:
    """The event type a watcher with a selection sees for a change, or None: an object entering
    the selection is ADDED, one leaving it DELETED (with its new state), and a deletion is seen
    when the last stored state was in it (``cacheWatcher.convertToWatchEvent`` in apiserver's
    ``storage/cacher``)."""
    if ev_type == ADDED:
        return ADDED if selects(obj) else None
    if ev_type == DELETED:
        return DELETED if selects(old if old is not None else obj) else None
    now = selects(obj)
    before = old is not None and selects(old)
    if now:
        return MODIFIED if before else ADDED
    return DELETED if before else None


@dataclass(init=False, slots=True)
class WatchEvent:
    type: str
    kind: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    resource_version: int
    # the event as a watch line, by how a watcher sees it: encoded once for all watchers, as the
    # watch cache's ``cachingObject`` keeps each serialization of an object
    wire: dict[Any, bytes] | None = None

    def __init__(
        self,
        type: str,
        kind: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        resource_version: int,
        wire: dict[Any, bytes] | None = None,
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.type = type
        self.kind = kind
        self.obj = obj
        self.old = old
        self.resource_version = resource_version
        self.wire = wire


class Watch:
    """Events delivered after ``resource_version``; the consumer drains them like an informer.

    ``notify`` (optional) is called after each event is buffered, so a consumer on another
    thread or task can wake up. ``limit`` (0: none) bounds the buffer as kube-apiserver's cacher
    bounds a watcher's channel: a consumer that falls further behind is ``overflowed`` (its buffer
    dropped, nothing more taken, ``on_overflow`` called) and must list and watch again.
    ``selections`` (by kind) narrow what the consumer sees, as a list and watch with a selector
    does (``selected_type``): an informer's tweaked list options.
    """

    def __init__(
        self,
        kinds: frozenset[str] | None,
        notify: Callable[[], None] | None = None,
        after: int = 0,
        selections: dict[str, Selection] | None = None,
    ) -> None:
        self.kinds = kinds
        self.selections = selections
        self._buffer: deque[WatchEvent] = deque()
        self.notify = notify
        self.after = after  # events up to this revision are already in what the consumer listed
        self.limit = 0
        self.overflowed = False
        self.on_overflow: Callable[[], None] | None = None

    def _offer(self, ev: WatchEvent) -> None:
        if ev.resource_version > self.after and (self.kinds is None or ev.kind in self.kinds):
            if self.overflowed:
                return
            if self.selections is not None:
                selects = self.selections.get(ev.kind)
                if selects is not None:
                    seen = selected_type(ev.type, ev.obj, ev.old, selects)
                    if seen is None:
                        return
                    if seen != ev.type:
                        ev = WatchEvent(seen, ev.kind, ev.obj, None if seen == ADDED else ev.old, ev.resource_version)
            self._buffer.append(ev)
            if self.limit and len(self._buffer) > self.limit:
                self.overflowed = True
                self._buffer.clear()
                if self.on_overflow is not None:
                    self.on_overflow()
            if self.notify is not None:
                self.notify()

    def __bool__(self) -> bool:
        return bool(self._buffer)

    def drain(self) -> list[WatchEvent]:
        out = list(self._buffer)
        self._buffer.clear()
        return out

    def pop(self) -> WatchEvent | None:
        return self._buffer.popleft() if self._buffer else None
