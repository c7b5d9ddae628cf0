"""What ``handleSchedulingFailure`` reads from a failed attempt (``pkg/scheduler/schedule_one.go``):
its Status, and the plugins the pod waits on (a FitError's Diagnosis, the plugin that rejected
it after Reserve, none for an Error), which decide the events that requeue it."""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.framework.status import Status
from kubesched.scheduler.framework.types import FitError


@dataclass(slots=True)
class Failure:
    """A failed attempt as a value. ``unschedulable``/``pending``: the pod's unschedulable and
    pending plugins from now on (``pending`` None: the pod keeps those it had)."""

    status: Status
    unschedulable: set[str]
    pending: set[str] | None = None

    @property
    def message(self) -> str:
        return self.status.message()

    @classmethod
    def error(cls, status: Status) -> Failure:
        """An Error: no plugin to wait on."""
        return cls(status, set(), set())

    @classmethod
    def rejected_by(cls, status: Status) -> Failure:
        """A status from a plugin after the node search (Reserve, Permit, PreBind, Bind): the
        pod waits on that plugin when it rejected the pod."""
        return cls(status, {status.plugin} if status.is_rejected() and status.plugin else set())

    @classmethod
    def no_fit(cls, status: Status, err: FitError) -> Failure:
        """No node fit: the Diagnosis's plugins."""
        diagnosis = err.diagnosis
        return cls(status, set(diagnosis.unschedulable_plugins), set(diagnosis.pending_plugins))
