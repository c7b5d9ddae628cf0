"""``CycleState``: per-attempt scratch space that plugins share within one scheduling cycle."""

from __future__ import annotations

import copy
from typing import Any


class CycleState:
    """Keys to plugin data; ``clone()`` copies values that define ``clone()``, else shares them."""

    __slots__ = (
        "_data",
        "pods_to_activate",
        "record_plugin_metrics",
        "results",
        "skip_filter",
        "skip_pre_bind",
        "skip_score",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        self.skip_pre_bind: set[str] = set()  # PreBind plugins whose PreBindPreFlight skipped
        self.pods_to_activate: dict[str, Any] = {}
        self.record_plugin_metrics = False
        # the attempt's PodResults when results are written on the pod (scheduler/resultstore.py);
        # a clone (preemption's dry runs) records nothing
        self.results: Any = None

    def read(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"{key} not found") from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def snapshot(self) -> dict[str, Any]:
        """The entries as they are now, for ``written_since``."""
        return dict(self._data)

    def written_since(self, before: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
        """The entries written since ``snapshot()`` gave ``before``; None when one was deleted."""
        data = self._data
        if any(k not in data for k in before):
            return None
        missing = object()
        return tuple((k, v) for k, v in data.items() if before.get(k, missing) is not v)

    def replay(self, writes: tuple[tuple[str, Any], ...]) -> None:
        """Write ``written_since``'s entries again, copied as ``clone()`` copies them."""
        for k, v in writes:
            self._data[k] = _cloned(v)

    def clone(self) -> CycleState:
        out = CycleState()
        out._data = {k: _cloned(v) for k, v in self._data.items()}
        out.skip_filter = set(self.skip_filter)
        out.skip_score = set(self.skip_score)
        out.skip_pre_bind = set(self.skip_pre_bind)
        out.record_plugin_metrics = self.record_plugin_metrics
        return out


def _cloned(value: Any) -> Any:
    """A state entry for a clone (``StateData.Clone``): its own ``clone()``, itself when it is a
    frozen dataclass (immutable: shared, as upstream's Clone of immutable data returns the same),
    else a shallow copy."""
    if hasattr(value, "clone"):
        return value.clone()
    params = getattr(type(value), "__dataclass_params__", None)
    if params is not None and params.frozen:
        return value
    return copy.copy(value)
