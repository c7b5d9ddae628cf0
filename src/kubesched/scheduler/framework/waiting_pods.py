"""Pods parked at Permit (``framework/runtime/waiting_pods_map.go``): Allow/Reject from outside."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kubesched.api.pod import PodInfo
from kubesched.clock import Clock
from kubesched.framework.status import Code, Status


class WaitingPod:
    """A pod waiting on one or more Permit plugins, each with its own timeout timer."""

    def __init__(
        self,
        pod: PodInfo,
        pending: dict[str, float],
        clock: Clock,
        on_done: Callable[[WaitingPod, Status | None], None],
    ) -> None:
        self.pod = pod
        self.pending = dict(pending)
        self._on_done = on_done
        self.done = False
        self._timers = [
            clock.call_at(clock.now() + timeout, self._timeout(name, timeout)) for name, timeout in pending.items()
        ]

    def _timeout(self, name: str, seconds: float) -> Callable[[], None]:
        def expire() -> None:
            self.reject(name, f"rejected due to timeout after waiting {_duration(seconds)} at plugin {name}")

        return expire

    def get_pending_plugins(self) -> list[str]:
        return list(self.pending)

    def allow(self, plugin: str) -> None:
        if self.done:
            return
        self.pending.pop(plugin, None)
        if not self.pending:
            self._finish(None)

    def reject(self, plugin: str, message: str) -> None:
        if self.done:
            return
        self._finish(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def _finish(self, status: Status | None) -> None:
        self.done = True
        for t in self._timers:
            t.cancel()
        self._on_done(self, status)


def _duration(seconds: float) -> str:
    """Go's time.Duration.String() for whole or fractional seconds."""
    if seconds >= 60 and seconds == int(seconds):
        m, s = divmod(int(seconds), 60)
        h, m = divmod(m, 60)
        return (f"{h}h" if h else "") + f"{m}m{s}s"
    return f"{seconds:g}s"


class WaitingPods:
    """UID → WaitingPod; ``reject`` with plugin "" rejects as upstream's RejectWaitingPod does."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __len__(self) -> int:
        return len(self._pods)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def reject(self, uid: str, plugin: str = "", message: str = "removed") -> bool:
        wp = self._pods.get(uid)
        if wp is None:
            return False
        wp.reject(plugin, message)
        return True
