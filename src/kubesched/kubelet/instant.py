"""The instant kubelet of simulations: a pod runs the moment it is bound (or placed on a node by
the input), with no lifecycle after that. ``EmbeddedCluster`` hands it to the store's bindings
when no hollow kubelet (``agent.py``) runs, so that budgets count bound pods healthy and
controllers see them Running, in the same write as the binding."""

from __future__ import annotations

from typing import Any


def started(status: dict[str, Any], now: str) -> dict[str, Any]:
    """A bound pod's status once its node started it: Running since ``now``, scheduled."""
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    scheduled = {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
    return {**status, "phase": "Running", "startTime": now, "conditions": [*conditions, scheduled]}


READY = ("Initialized", "ContainersReady", "Ready")


def started_ready(status: dict[str, Any], now: str) -> dict[str, Any]:
    """``started``, and Ready as a kubelet reports a started pod with no probes (Initialized,
    ContainersReady, Ready): what a StatefulSet waits for before its next ordinal, a Deployment
    counts available. Simulations that expand workloads run their pods so."""
    out = started(status, now)
    kept = [c for c in out["conditions"] if c.get("type") not in READY]
    ready = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now} for t in READY]
    return {**out, "conditions": [*kept, *ready]}
