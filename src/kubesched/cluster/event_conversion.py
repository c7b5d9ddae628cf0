"""Events in their two API shapes: events.k8s.io/v1 (what the scheduler writes) and core v1
(how they are stored and what ``kubectl describe`` reads).

The field mapping is upstream's ``pkg/apis/events/v1/conversion.go``; the object the scheduler
records follows client-go's ``tools/events`` recorder (name ``<regarding>.<unix nanos in hex>``,
``eventTime`` as MicroTime, the note cut to 1024 bytes with " ..." appended).
"""

from __future__ import annotations

from typing import Any

from kubesched.clock import EPOCH_UNIX, rfc3339_micro

NOTE_LENGTH_LIMIT = 1024  # events.k8s.io/v1 validation: noteLengthLimit

# events.k8s.io/v1 field → core v1 field (the rest keep their names)
_RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_BACK = {v: k for k, v in _RENAMED.items()}


def to_core(ev: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as core v1 Event."""
    out = {_RENAMED.get(k, k): v for k, v in ev.items()}
    out["apiVersion"], out["kind"] = "v1", "Event"
    return out


def from_core(ev: dict[str, Any]) -> dict[str, Any]:
    """A core v1 Event as events.k8s.io/v1 Event."""
    out = {_BACK.get(k, k): v for k, v in ev.items()}
    out["apiVersion"], out["kind"] = "events.k8s.io/v1", "Event"
    return out


def truncate_note(message: str) -> str:
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    return message[: NOTE_LENGTH_LIMIT - 4] + " ..."


class EventRecorder:
    """client-go's events recorder for one component: builds the events.k8s.io/v1 Event of each
    call; the client decides how it is written."""

    def __init__(self, reporting_controller: str, reporting_instance: str) -> None:
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance
        self._seq = 0

    def event(
        self,
        now: float,
        type_: str,
        reason: str,
        action: str,
        regarding: dict[str, Any],
        message: str,
        related: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The Event for ``regarding`` (and ``related``, an object the event also concerns) at
        ``now`` (clock seconds); the name's nanoseconds are kept unique by a sequence, since a
        virtual clock repeats instants."""
        self._seq += 1
        meta = regarding.get("metadata") or {}
        nanos = int((now + EPOCH_UNIX) * 1e9) + self._seq
        ev = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name')}.{nanos:x}", "namespace": meta.get("namespace") or "default"},
            "eventTime": rfc3339_micro(now),
            "type": type_,
            "reason": reason,
            "action": action,
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "regarding": reference(regarding),
            "note": truncate_note(message),
        }
        if related is not None:
            ev["related"] = reference(related)
        return ev


def reference(obj: dict[str, Any]) -> dict[str, Any]:
    """The ObjectReference of an object (client-go ``tools/reference.GetReference``); a pod
    when the object does not say its kind."""
    meta = obj.get("metadata") or {}
    return {
        "kind": obj.get("kind") or "Pod",
        "namespace": meta.get("namespace") or "",
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": obj.get("apiVersion") or "v1",
        "resourceVersion": meta.get("resourceVersion"),
    }
