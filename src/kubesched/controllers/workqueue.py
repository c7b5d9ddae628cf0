"""client-go's ``util/workqueue`` as the controllers use it: ``AddAfter`` (``Later``: work due again
at a time) and the per-item exponential backoff of ``DefaultControllerRateLimiter`` (an object whose
sync failed comes back after 5 ms, 10 ms, 20 ms… up to 1,000 s, and starts over once it syncs)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from kubesched.client.object_client import ObjectClient
from kubesched.health import LoopHealth

BASE_DELAY = 0.005  # ItemExponentialFailureRateLimiter's base delay
MAX_DELAY = 1000.0  # and its cap


class Later:
    """Timers that mark work due again (the workqueue's ``AddAfter``): one pending per key; when
    it fires, ``due(key)`` runs and the manager is woken."""

    def __init__(self, client: ObjectClient, due: Callable[[Any], None], wake: Callable[[], None]) -> None:
        self.client = client
        self.due = due
        self.wake = wake
        self._pending: set[Any] = set()

    def at(self, key: Any, when: float) -> None:
        if key in self._pending:
            return
        self._pending.add(key)

        def fire() -> None:
            self._pending.discard(key)
            self.due(key)
            self.wake()

        self.client.clock.call_at(when, fire)


def every(client: ObjectClient, period: float, due: Callable[[], None]) -> None:
    """``wait.Until``: ``due()`` every ``period`` seconds of the client's clock, from now on."""

    def fire() -> None:
        due()
        client.clock.call_at(client.clock.now() + period, fire)

    client.clock.call_at(client.clock.now() + period, fire)


class ItemBackoff:
    """``ItemExponentialFailureRateLimiter``: ``when`` counts a failure of ``key`` and returns how long
    to wait before its retry; ``forget`` clears the count after a good sync."""

    def __init__(self, base: float = BASE_DELAY, cap: float = MAX_DELAY) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        return min(self.cap, self.base * 2.0 ** min(n, 64))

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def retries(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class Retries:
    """A loop's per-key error handling (``processNextWorkItem``): ``attempt`` runs ``sync(key)``;
    when it raises, the error is logged with the object and counted in ``health`` and the key is
    marked due again after its backoff (``AddRateLimited``); when it succeeds, its count is
    forgotten. Every other key goes on either way."""

    def __init__(
        self,
        client: ObjectClient,
        loop: str,
        due: Callable[[Any], None],
        wake: Callable[[], None],
        health: LoopHealth | None = None,
    ) -> None:
        self.client = client
        self.loop = loop
        self.health = health or LoopHealth()
        self.backoff = ItemBackoff()
        self._later = Later(client, due, wake)

    def attempt(self, key: Any, what: str, sync: Callable[[Any], object]) -> None:
        try:
            sync(key)
        except Exception as exc:  # utilruntime.HandleError
            self.health.error(self.loop, what, exc)
            self._later.at(key, self.client.clock.now() + self.backoff.when(key))
        else:
            self.backoff.forget(key)
