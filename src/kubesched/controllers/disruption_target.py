"""The ``DisruptionTarget`` condition kube-controller-manager's evicting controllers put on a pod
before they delete it (``apipod.UpdatePodCondition``): the taint managers', the pod GC's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def with_disruption_target(stamp: str, reason: str, message: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A patch function: the pod with ``DisruptionTarget`` True for ``reason``, replacing any."""

    def patch(o: dict[str, Any]) -> dict[str, Any]:
        status = dict(o.get("status") or {})
        conds = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conds.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "lastTransitionTime": stamp,
                "reason": reason,
                "message": message,
            }
        )
        return {**o, "status": {**status, "conditions": conds}}

    return patch
