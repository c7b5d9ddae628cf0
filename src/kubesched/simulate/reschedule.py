"""``simulate --reschedule``: a cluster's pods taken off their nodes and scheduled again, so that a
configuration (``--config``, feature gates) is judged on every pod a cluster holds, not only on
its pending ones: what the v1.37 profile, or the user's, would do with all of them."""

from __future__ import annotations

import copy
from collections.abc import Iterable

from kubesched.api.pod import DEFAULT_SCHEDULER_NAME
from kubesched.cluster.loader import Manifest

MIRROR = "kubernetes.io/config.mirror"
# what a pod's status says about where and how it ran: dropped with its binding, as a pod that
# was never scheduled has none of it
_RAN = ("phase", "conditions", "nominatedNodeName", "startTime", "hostIP", "hostIPs", "podIP", "podIPs")


def reschedulable(obj: dict[str, object], scheduler_names: Iterable[str]) -> bool:
    """A bound pod a profile schedules that still runs: not finished, not being deleted, not a
    mirror pod (the kubelet's, bound by it)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    assert isinstance(meta, dict) and isinstance(spec, dict) and isinstance(status, dict)
    return (
        bool(spec.get("nodeName"))
        and (spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) in set(scheduler_names)
        and status.get("phase") not in ("Succeeded", "Failed")
        and not meta.get("deletionTimestamp")
        and MIRROR not in (meta.get("annotations") or {})
    )


def unbound(manifests: list[Manifest], scheduler_names: Iterable[str]) -> tuple[list[Manifest], int]:
    """The manifests with every reschedulable pod unbound (its node and what it ran as dropped),
    and how many were."""
    names = list(scheduler_names)
    out: list[Manifest] = []
    count = 0
    for m in manifests:
        if m.kind != "Pod" or not reschedulable(m.obj, names):
            out.append(m)
            continue
        obj = copy.deepcopy(m.obj)
        obj["spec"].pop("nodeName", None)
        status = obj.get("status")
        if isinstance(status, dict):
            for key in _RAN:
                status.pop(key, None)
        out.append(Manifest(obj, m.file, m.index))
        count += 1
    return out, count
