"""NodeVolumeLimits (PreFilter, Filter): a node may not get more volumes of a CSI driver than its
CSINode's ``allocatable.count`` for that driver (``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go``).

A volume counts once per node however many pods use it, by its unique name ``driver/handle``;
in-tree volumes count under their CSI driver when the node's CSINode lists the plugin as
migrated; an unbound claim counts under its class's provisioner with a name of its own; the
VolumeAttachments to the node count too. The volumes each node holds are kept from the cache's
pod arrivals and departures and from VolumeAttachment, claim and volume changes, as columns
over the node table; preemption's dry run takes victims out through ``remove_pod``.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.api.volumes import (
    ANN_MIGRATED_PLUGINS,
    claim_class,
    ephemeral_claim_error,
    ephemeral_claim_name,
    has_volumes,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.plugins.helper import VolumeSignPlugin, uses_claim_or_ephemeral

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
PRE_FILTER_KEY = "PreFilterNodeVolumeLimits"

# in-tree plugin → (its CSI driver, the volume source key, the field naming the disk)
# (k8s.io/csi-translation-lib's translators for the attachable in-tree plugins)
IN_TREE: dict[str, tuple[str, str, str]] = {
    "kubernetes.io/aws-ebs": ("ebs.csi.aws.com", "awsElasticBlockStore", "volumeID"),
    "kubernetes.io/gce-pd": ("pd.csi.storage.gke.io", "gcePersistentDisk", "pdName"),
    "kubernetes.io/azure-disk": ("disk.csi.azure.com", "azureDisk", "diskURI"),
    "kubernetes.io/cinder": ("cinder.csi.openstack.org", "cinder", "volumeID"),
}
_BY_SOURCE = {source: (plugin, driver, key) for plugin, (driver, source, key) in IN_TREE.items()}

Volumes = dict[str, str]  # unique name → driver


class NotFoundError(LookupError):
    pass


def migrated_plugins(csi_node: Mapping[str, Any] | None) -> frozenset[str]:
    """``isCSIMigrationOn``: the in-tree plugins the node's CSINode says are migrated."""
    if csi_node is None:
        return frozenset()
    raw = ((csi_node.get("metadata") or {}).get("annotations") or {}).get(ANN_MIGRATED_PLUGINS, "")
    return frozenset(p.strip() for p in str(raw).split(",") if p.strip())


def node_limits(csi_node: Mapping[str, Any] | None) -> dict[str, int]:
    """``getVolumeLimits``: driver → ``allocatable.count`` from the CSINode."""
    out: dict[str, int] = {}
    for d in ((csi_node or {}).get("spec") or {}).get("drivers") or []:
        count = (d.get("allocatable") or {}).get("count")
        if count is not None:
            out[str(d.get("name"))] = int(count)
    return out


def in_tree_volume(source: Mapping[str, Any], migrated: frozenset[str]) -> tuple[str, str] | None:
    """(driver, handle) of an in-tree disk in a volume or PV spec when its plugin is migrated."""
    for key, (plugin, driver, field_name) in _BY_SOURCE.items():
        src = source.get(key)
        if src:
            if plugin not in migrated:
                return None
            return driver, str(src.get(field_name) or "")
    return None


@dataclass(slots=True)
class PreFilterState:
    """The pods preemption's dry run takes off (or adds to) a node, with their volumes."""

    removed: dict[str, list[Volumes]] = field(default_factory=dict)
    added: dict[str, list[Volumes]] = field(default_factory=dict)

    def clone(self) -> PreFilterState:
        return PreFilterState(
            {k: list(v) for k, v in self.removed.items()}, {k: list(v) for k, v in self.added.items()}
        )


class _Extensions(PreFilterExtensions):
    def __init__(self, plugin: NodeVolumeLimits) -> None:
        self.plugin = plugin

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, nodes: NodeTableView, row: int) -> None:
        s: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is not None:
            s.added.setdefault(nodes.names[row], []).append(self.plugin.volumes_of(pod_to_add, nodes.names[row]))

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, nodes: NodeTableView, row: int
    ) -> None:
        s: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is not None:
            s.removed.setdefault(nodes.names[row], []).append(self.plugin.volumes_of(pod_to_remove, nodes.names[row]))


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions, VolumeSignPlugin):
    name = "NodeVolumeLimits"
    pre_filter_memo = Memo(skip_only=True)  # whether it skips is the pod's volumes' doing
    cross_node = False  # the verdict on a node depends on that node's pods alone

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.random_prefix = secrets.token_hex(16)  # names unbound claims apart from every PV handle
        self._extensions = _Extensions(self)
        # the holders of volumes on each node: pods (by uid) and VolumeAttachments ("va/<name>")
        self._held: dict[str, tuple[str, Volumes, PodInfo | None]] = {}
        self._refs: dict[str, Counter[str]] = {}  # node → unique name → holders
        self._drivers: dict[str, str] = {}  # unique name → driver
        self._where: dict[str, set[str]] = {}  # unique name → the nodes holding it
        self._count: dict[str, Counter[str]] = {}  # driver → node → unique volumes
        self._by_claim: dict[str, set[str]] = {}  # "namespace/claim" → holders
        self._migrated: dict[str, frozenset[str]] = {}  # node → in-tree plugins its CSINode migrated
        self._limits: dict[str, tuple[tuple[int, int, int], np.ndarray]] = {}
        self._limited: tuple[int, bool] | None = None
        self._groups: tuple[tuple[int, int, int], list[tuple[str, np.ndarray]]] | None = (
            None  # driver → (key, limit per row)
        )
        # driver → ((table id, epoch), volumes on each row of the scheduler's table)
        self._attached: dict[str, tuple[tuple[int, int], np.ndarray]] = {}
        if handle is not None:
            handle.snapshot.add_pod_listener(self._on_pod)
            subscribe = getattr(handle.listers, "subscribe", None)
            if subscribe is not None:
                subscribe("VolumeAttachment", self._on_attachment)
                subscribe("PersistentVolumeClaim", self._on_claim)
                subscribe("PersistentVolume", self._on_volume)
                subscribe("CSINode", self._on_csi_node)

    # -- listers ------------------------------------------------------------------------------------
    def _get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        assert self.handle is not None
        return self.handle.listers.get(kind, namespace, name)

    def _csi_node(self, node: str) -> dict[str, Any] | None:
        return self._get("CSINode", "", node)

    # -- a pod's volumes (filterAttachableVolumes) --------------------------------------------------
    def _pv_volume(self, pv: Mapping[str, Any], migrated: frozenset[str]) -> tuple[str, str] | None:
        spec = pv.get("spec") or {}
        csi = spec.get("csi")
        if csi:
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        return in_tree_volume(spec, migrated)

    def _claim_volume(self, namespace: str, pvc: Mapping[str, Any], migrated: frozenset[str]) -> tuple[str, str] | None:
        pv_name = (pvc.get("spec") or {}).get("volumeName")
        if pv_name:
            pv = self._get("PersistentVolume", "", str(pv_name))
            if pv is not None:
                return self._pv_volume(pv, migrated)
        # getCSIDriverInfoFromSC: an unbound claim (or one whose PV is not seen yet) counts
        # under its class's provisioner
        cls = self._get("StorageClass", "", claim_class(pvc))
        if cls is None:
            return None
        provisioner = str(cls.get("provisioner") or "")
        if provisioner in IN_TREE:
            if provisioner not in migrated:
                return None
            provisioner = IN_TREE[provisioner][0]
        if not provisioner:
            return None
        name = (pvc.get("metadata") or {}).get("name")
        return provisioner, f"{self.random_prefix}-{namespace}/{name}"

    def _attachable(self, pod: PodInfo, node: str, *, new: bool) -> Volumes:
        """The CSI volumes of ``pod`` on ``node``; for the pod being scheduled, a claim that does
        not exist is NotFoundError and an ephemeral claim of another pod a ValueError."""
        migrated = migrated_plugins(self._csi_node(node))
        out: Volumes = {}
        for vol in (pod.obj.get("spec") or {}).get("volumes") or []:
            if not isinstance(vol, Mapping):
                continue
            found: tuple[str, str] | None = None
            claim_name = ""
            if vol.get("persistentVolumeClaim"):
                claim_name = str(vol["persistentVolumeClaim"].get("claimName") or "")
            elif vol.get("ephemeral"):
                claim_name = ephemeral_claim_name(pod.obj, vol)
            if claim_name:
                pvc = self._get("PersistentVolumeClaim", pod.namespace, claim_name)
                if pvc is None:
                    if new:
                        raise NotFoundError(f'persistentvolumeclaim "{claim_name}" not found')
                    continue
                if vol.get("ephemeral") and (err := ephemeral_claim_error(pod.obj, pvc)):
                    if new:
                        raise ValueError(err)
                    continue
                found = self._claim_volume(pod.namespace, pvc, migrated)
            else:
                found = in_tree_volume(vol, migrated)
            if found is not None:
                out[f"{found[0]}/{found[1]}"] = found[0]
        return out

    def volumes_of(self, pod: PodInfo, node: str) -> Volumes:
        held = self._held.get(pod.uid)
        return dict(held[1]) if held is not None else self._attachable(pod, node, new=False)

    # -- the volumes on each node ---------------------------------------------------------------------
    def _hold(self, holder: str, node: str, volumes: Volumes, pod: PodInfo | None) -> None:
        self._release(holder)
        if not volumes and pod is None:
            return
        self._held[holder] = (node, volumes, pod)
        refs = self._refs.setdefault(node, Counter())
        for unique, driver in volumes.items():
            refs[unique] += 1
            if refs[unique] == 1:
                self._drivers[unique] = driver
                self._where.setdefault(unique, set()).add(node)
                self._count.setdefault(driver, Counter())[node] += 1
                self._moved(driver, node, 1)
        if pod is not None:
            for claim in _claims(pod):
                self._by_claim.setdefault(claim, set()).add(holder)

    def _moved(self, driver: str, node: str, delta: int) -> None:
        """Keep the main table's column of the driver's volumes per node current."""
        cached = self._attached.get(driver)
        if cached is None or self.handle is None:
            return
        table = self.handle.snapshot.table
        if cached[0] != (id(table), int(getattr(table, "epoch", -1))):
            del self._attached[driver]  # the table changed shape: rebuilt when next read
            return
        row = table.index.get(node)
        if row is not None:
            cached[1][row] += delta

    def _release(self, holder: str) -> None:
        held = self._held.pop(holder, None)
        if held is None:
            return
        node, volumes, pod = held
        refs = self._refs.get(node, Counter())
        for unique, driver in volumes.items():
            refs[unique] -= 1
            if refs[unique] <= 0:
                del refs[unique]
                self._where[unique].discard(node)
                if not self._where[unique]:
                    del self._where[unique]
                self._count[driver][node] -= 1
                self._moved(driver, node, -1)
        if pod is not None:
            for claim in _claims(pod):
                self._by_claim.get(claim, set()).discard(holder)

    def _on_pod(self, event: str, pod: PodInfo, node: str, _assumed: bool) -> None:
        if not has_volumes(pod.obj):
            return
        if event == "add":
            if pod.pvc_names or _counts(pod):
                self._hold(pod.uid, node, self._attachable(pod, node, new=False), pod)
        else:
            self._release(pod.uid)

    def _resync(self, holders: set[str] | None) -> None:
        for holder in list(holders or ()):
            held = self._held.get(holder)
            if held is not None and held[2] is not None:
                self._hold(holder, held[0], self._attachable(held[2], held[0], new=False), held[2])

    def _on_claim(self, old: Any, new: Any) -> None:
        obj = new if new is not None else old
        meta = (obj or {}).get("metadata") or {}
        self._resync(self._by_claim.get(f"{meta.get('namespace') or 'default'}/{meta.get('name')}"))

    def _on_volume(self, old: Any, new: Any) -> None:
        obj = new if new is not None else old
        claim = ((obj or {}).get("spec") or {}).get("claimRef") or {}
        if claim:
            self._resync(self._by_claim.get(f"{claim.get('namespace') or 'default'}/{claim.get('name')}"))

    def _on_csi_node(self, old: Any, new: Any) -> None:
        obj = new if new is not None else old
        node = str(((obj or {}).get("metadata") or {}).get("name"))
        plugins = migrated_plugins(new)
        if plugins:
            self._migrated[node] = plugins
        else:
            self._migrated.pop(node, None)
        self._resync({h for h, (n, _, p) in self._held.items() if n == node and p is not None})

    def _on_attachment(self, old: Any, new: Any) -> None:
        obj = new if new is not None else old
        holder = "va/" + str(((obj or {}).get("metadata") or {}).get("name"))
        if new is None:
            self._release(holder)
            return
        spec = new.get("spec") or {}
        node = str(spec.get("nodeName") or "")
        source = spec.get("source") or {}
        migrated = migrated_plugins(self._csi_node(node))
        found: tuple[str, str] | None = None
        if source.get("persistentVolumeName"):
            pv = self._get("PersistentVolume", "", str(source["persistentVolumeName"]))
            found = self._pv_volume(pv, migrated) if pv is not None else None
        elif source.get("inlineVolumeSpec"):
            found = self._pv_volume({"spec": source["inlineVolumeSpec"]}, migrated)
        self._hold(holder, node, {f"{found[0]}/{found[1]}": found[0]} if found else {}, None)

    # -- columns -----------------------------------------------------------------------------------
    def _attached_column(self, nodes: NodeTableView, driver: str) -> np.ndarray:
        """The driver's volumes on each row: kept up to date for the scheduler's table, built
        afresh for a what-if copy."""
        counts: Mapping[str, int] = self._count.get(driver, {})
        key = (id(nodes), int(getattr(nodes, "epoch", -1)))
        main = self.handle is not None and nodes is self.handle.snapshot.table
        if main:
            cached = self._attached.get(driver)
            if cached is not None and cached[0] == key and len(cached[1]) == nodes.n:
                return cached[1]
        col = np.zeros(nodes.n, np.int64)
        for node, v in counts.items():
            row = nodes.index.get(node)
            if row is not None and v:
                col[row] = v
        if main:
            self._attached[driver] = (key, col)
        return col

    def _limit_column(self, nodes: NodeTableView, driver: str) -> np.ndarray:
        """The driver's limit on each row (-1 where the node sets none), kept while neither the
        table nor any CSINode changes."""
        assert self.handle is not None
        listers = self.handle.listers
        key = (id(nodes), int(getattr(nodes, "epoch", -1)), getattr(listers, "versions", {}).get("CSINode", 0))
        cached = self._limits.get(driver)
        if cached is not None and cached[0] == key and len(cached[1]) == nodes.n:
            return cached[1]
        col = np.full(nodes.n, -1, np.int64)
        for csi_node in listers.all("CSINode"):
            n = node_limits(csi_node).get(driver)
            row = nodes.index.get(str((csi_node.get("metadata") or {}).get("name")))
            if n is not None and row is not None:
                col[row] = n
        self._limits[driver] = (key, col)
        return col

    # -- PreFilter / Filter ---------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not has_volumes(pod.obj) or (not pod.pvc_names and not _counts(pod)):
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, PreFilterState())
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self._extensions

    def _migration_groups(self, nodes: NodeTableView) -> list[tuple[str, np.ndarray]]:
        """The rows by the in-tree plugins their CSINode migrated (a pod's volumes differ by node
        only through them): a node of each group and its rows; kept while neither the table nor
        any CSINode changes."""
        assert self.handle is not None
        key = (
            id(nodes),
            int(getattr(nodes, "epoch", -1)),
            getattr(self.handle.listers, "versions", {}).get("CSINode", 0),
        )
        if self._groups is not None and self._groups[0] == key:
            return self._groups[1]
        members: dict[frozenset[str], list[int]] = {}
        for node, plugins in self._migrated.items():
            row = nodes.index.get(node)
            if row is not None:
                members.setdefault(plugins, []).append(row)
        rest = np.ones(nodes.n, bool)
        for rows in members.values():
            rest[rows] = False
        groups = [("", np.flatnonzero(rest))] + [(nodes.names[v[0]], np.asarray(v)) for v in members.values()]
        groups = [(node, rows) for node, rows in groups if len(rows)]
        self._groups = (key, groups)
        return groups

    def _any_limits(self) -> bool:
        """Whether some CSINode sets an attach limit (else no node can refuse a volume); kept
        while no CSINode changes."""
        assert self.handle is not None
        version = getattr(self.handle.listers, "versions", {}).get("CSINode", 0)
        if self._limited is None or self._limited[0] != version:
            limited = any(node_limits(c) for c in self.handle.listers.all("CSINode"))
            self._limited = (version, limited)
        return self._limited[1]

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        s: PreFilterState = state.get(PRE_FILTER_KEY) or PreFilterState()
        if not self._any_limits():  # getVolumeLimits is empty on every node: every node passes
            return None
        exceeded = np.zeros(nodes.n, bool)
        for node, rows in self._migration_groups(nodes):
            if not len(rows):
                continue
            try:
                volumes = self._attachable(pod, node, new=True)
            except NotFoundError as exc:
                return NodeVerdicts.reject_where(np.ones(nodes.n, bool), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))
            except ValueError as exc:
                return NodeVerdicts.reject_where(np.ones(nodes.n, bool), Code.ERROR, str(exc))
            if volumes:
                exceeded[rows] = self._exceeds(nodes, volumes, s)[rows]
        if not exceeded.any():
            return None
        return NodeVerdicts.reject_where(exceeded, Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)

    def _exceeds(self, nodes: NodeTableView, volumes: Volumes, s: PreFilterState) -> np.ndarray:
        """Rows where some driver's attached volumes plus the pod's new ones pass its limit."""
        exceed = np.zeros(nodes.n, bool)
        per_driver: dict[str, list[str]] = {}
        for unique, driver in volumes.items():
            per_driver.setdefault(driver, []).append(unique)
        for driver, uniques in per_driver.items():
            limit = self._limit_column(nodes, driver)
            if not (limit >= 0).any():
                continue
            attached = self._attached_column(nodes, driver).copy()
            new = np.full(nodes.n, len(uniques), np.int64)
            for unique in uniques:  # a volume already on a node takes no new slot there
                for node in self._where.get(unique, ()):
                    if (row := nodes.index.get(node)) is not None:
                        new[row] -= 1
            for node in set(s.removed) | set(s.added):
                row = nodes.index.get(node)
                if row is None:
                    continue
                refs = Counter(self._refs.get(node, Counter()))
                for vols in s.removed.get(node, ()):
                    refs.subtract(vols.keys())
                for vols in s.added.get(node, ()):
                    refs.update(vols.keys())
                on_node = {u for u, c in refs.items() if c > 0}
                attached[row] = sum(1 for u in on_node if self._drivers.get(u, volumes.get(u)) == driver)
                new[row] = sum(1 for u in uniques if u not in on_node)
            exceed |= (limit >= 0) & (attached + new > limit)
        return exceed

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def csi_node_updated(_pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterCSINodeUpdated``: some driver's limit went up (or appeared)."""
            if not isinstance(old, Mapping) or not isinstance(new, Mapping):
                return True
            before, after = node_limits(old), node_limits(new)
            return any(d not in before or n > before[d] for d, n in after.items())

        def pod_deleted(pod: PodInfo, old: Any, _new: Any) -> bool:
            """``isSchedulableAfterAssignedPodDeleted``: the deleted pod had volumes that count."""
            if not isinstance(old, PodInfo):
                return True
            return bool(old.pvc_names) or _counts(old)

        return [
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.UPDATE), csi_node_updated),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), pod_deleted),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD), uses_claim_or_ephemeral),
            ClusterEventWithHint(ClusterEvent("VolumeAttachment", ActionType.DELETE)),
        ]


def _vols(pod: PodInfo) -> list[Any]:
    return list((pod.obj.get("spec") or {}).get("volumes") or [])


def _counts(pod: PodInfo) -> bool:
    """An ephemeral or in-tree attachable volume (claims are counted apart)."""
    return any(isinstance(v, Mapping) and (v.get("ephemeral") or _in_tree(v)) for v in _vols(pod))


def _in_tree(vol: Mapping[str, Any]) -> bool:
    return any(vol.get(key) for key in _BY_SOURCE)


def _claims(pod: PodInfo) -> list[str]:
    names = list(pod.pvc_names) + [
        ephemeral_claim_name(pod.obj, v) for v in _vols(pod) if isinstance(v, Mapping) and v.get("ephemeral")
    ]
    return [f"{pod.namespace}/{n}" for n in names]
