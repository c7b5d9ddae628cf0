"""NodePorts (PreFilter, Filter): host ports a pod asks for must be free on the node.

Conflicts follow ``HostPortInfo.CheckConflict``: same protocol and port, and either side bound
to 0.0.0.0 or both to the same IP, checked on the node table's per-port use columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.nodetable import ANY_USE

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"


def ports_conflict(want_ip: str, have_ips: Any) -> bool:
    if want_ip == ANY_IP:
        return bool(have_ips)
    return want_ip in have_ips or ANY_IP in have_ips


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name = "NodePorts"
    pre_filter_memo = Memo()  # the pod's host ports alone
    cross_node = False  # the verdict on a node depends on that node's pods alone

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): the host ports asked for (``fwk.HostPortsSigner``)."""
        return [SignFragment("HostPorts", tuple(sorted(pod.host_ports)))], None

    rows_only = True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status(Code.SKIP)
        return None, None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        conflict: np.ndarray | None = None
        for hp in pod.host_ports:
            # a wildcard port conflicts with any use; a specific IP with the same IP or a wildcard
            keys = (ANY_USE,) if hp.ip == ANY_IP else (hp.ip, ANY_IP)
            for key in keys:
                uses = nodes.port_uses(hp.protocol, hp.port, key)
                if uses is not None:
                    hit = uses > 0
                    conflict = hit if conflict is None else conflict | hit
        if conflict is None or not np.count_nonzero(conflict):
            return None
        return NodeVerdicts.reject_where(conflict, Code.UNSCHEDULABLE, ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def deleted_pod_frees_port(pod: PodInfo, old: Any, _new: Any) -> bool:
            if not isinstance(old, PodInfo):
                return True
            return any(
                (a.protocol, a.port) == (b.protocol, b.port) and ports_conflict(a.ip, {b.ip})
                for a in pod.host_ports
                for b in old.host_ports
            )

        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), deleted_pod_frees_port),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
        ]
