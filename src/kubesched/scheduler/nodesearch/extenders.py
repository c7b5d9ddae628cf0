"""``findNodesThatPassExtenders``: after the Filter plugins, each interested filter extender in
turn narrows the feasible nodes (``pkg/scheduler/schedule_one.go``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.status import Code, Status
from kubesched.scheduler.extender import ExtenderError, HTTPExtender
from kubesched.scheduler.nodetable import NodeTable

log = logging.getLogger("kubesched.scheduler")

NodeLookup = Callable[[str], "dict[str, Any] | None"]


def node_objects(ext: HTTPExtender, names: list[str], lookup: NodeLookup) -> list[dict[str, Any]]:
    """The Node objects an extender is sent with the names (none when it caches nodes)."""
    if ext.cfg.node_cache_capable:
        return []
    return [obj for obj in map(lookup, names) if obj is not None]


def find_nodes_that_pass_extenders(
    extenders: list[HTTPExtender],
    lookup: NodeLookup,
    pod: PodInfo,
    nodes: NodeTable,
    feasible: np.ndarray,
    diagnosis: Diagnosis,
) -> np.ndarray | Status:
    """The feasible rows every interested filter extender keeps; the nodes one fails take its
    reasons in ``diagnosis`` (unresolvable ones first). An extender's error that is not
    ignorable is the attempt's Error."""
    names = [nodes.names[int(r)] for r in feasible]
    for ext in extenders:
        if not names:
            break
        if not ext.is_filter() or not ext.is_interested(pod):
            continue
        try:
            passed, failed, unresolvable = ext.filter(pod, names, node_objects(ext, names, lookup))
        except ExtenderError as err:
            if ext.cfg.ignorable:
                log.warning("skipping extender %s as it returned error: %s", ext.name, err)
                continue
            return Status.error(str(err))
        for name, message in unresolvable.items():
            if name in nodes.index:
                diagnosis.set_from_extender(nodes.index[name], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
        for name, message in failed.items():
            if name in nodes.index and name not in unresolvable:
                diagnosis.set_from_extender(nodes.index[name], Code.UNSCHEDULABLE, message)
        known = set(names)
        kept = [n for n in passed if n in known]
        if len(kept) < len(names):
            diagnosis.unschedulable_plugins.add("Extender")
        names = kept
    return np.array([nodes.index[n] for n in names], np.int64)
