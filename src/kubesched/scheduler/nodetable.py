"""The columnar node table: upstream's NodeInfo list as numpy arrays over nodes.

One row per node. Resources are an int64 matrix (cpu in millicores, memory, ephemeral-storage,
then every scalar resource seen so far); labels are interned per key into int32 code columns;
taints are a boolean matrix over the distinct taints in the cluster; images and host ports are
indexed so a pod only touches the nodes that hold its image or port. Filters and scores read
whole columns at once. ``order()`` is the nodeTree order (zones interleaved round-robin) that
upstream's node search rotates through (``pkg/scheduler/backend/cache/node_tree.go``).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.node_features import mask_words, node_mask, word_count
from kubesched.api.pod import PodInfo
from kubesched.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from kubesched.api.selectors import Requirement, Taint

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
NAME_FIELD = "metadata.name"

PortKey = tuple[str, int]  # (protocol, port)

# rows kept in the change log beyond one per node before it is cut (and the epoch bumped)
CHANGE_LOG_LIMIT = 65536


def zone_key(labels: Mapping[str, str]) -> str:
    """``utilnode.GetZoneKey``: region and zone joined, or "" when the node has neither."""
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    return f"{region}:\x00:{zone}" if zone or region else ""


class NodeTable:
    """Node state as columns; rows are node indexes, valid up to ``n``."""

    def __init__(self, capacity: int = 64) -> None:
        self.n = 0
        self._cap = capacity
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.res_names: list[str] = [CPU, MEMORY, EPHEMERAL_STORAGE]
        self.res_index: dict[str, int] = {r: i for i, r in enumerate(self.res_names)}
        # resource-major (resources × rows): numpy's inner loops then run along the nodes
        self._alloc = np.zeros((3, capacity), np.int64)
        self._requested = np.zeros((3, capacity), np.int64)
        self._nonzero = np.zeros((2, capacity), np.int64)
        self._pod_count = np.zeros(capacity, np.int64)
        self._alloc_pods = np.zeros(capacity, np.int64)
        self._unschedulable = np.zeros(capacity, bool)
        # node_features.node_mask of declaredFeatures, in 64-bit words (one while the registry is small)
        self._features = np.zeros((capacity, word_count()), np.uint64)
        self.specs: list[NodeSpecInfo] = []
        self._label_values: dict[str, dict[str, int]] = {}
        self._label_codes: dict[str, np.ndarray] = {}
        self._label_ints: dict[str, tuple[int, np.ndarray]] = {}
        self.taint_ids: dict[Taint, int] = {}
        self.taint_list: list[Taint] = []
        self._taints = np.zeros((capacity, 0), bool)
        self._image_size: dict[str, np.ndarray] = {}
        self._image_nodes: Counter[str] = Counter()
        # (protocol, port) -> host IP (or ANY_USE) -> pods using it per row; None: rebuilt on use
        self._port_counts: dict[PortKey, dict[str, np.ndarray]] | None = {}
        self.node_ports: list[Counter[tuple[str, str, int]]] = []
        self._zones: dict[str, list[str]] = {}
        self._order: np.ndarray | None = None
        self._order_identity: bool | None = None
        self.generation = 0
        # for the shape cache (framework/shape_cache.py): rows whose pods changed, in order, and
        # an epoch bumped by anything that changes more than a row's pods (nodes added, updated
        # or removed, a new resource column, the log cut short)
        self.changed: list[int] = []
        self.epoch = 0
        self._label_unique: dict[str, tuple[int, bool]] = {}
        self._least_alloc: tuple[int, list[int]] | None = None  # (epoch, least_alloc())
        self._position: np.ndarray | None = None

    # -- column views (length n) --------------------------------------------------------------
    @property
    def alloc(self) -> np.ndarray:
        return self._alloc[:, : self.n]

    @property
    def requested(self) -> np.ndarray:
        return self._requested[:, : self.n]

    @property
    def nonzero_requested(self) -> np.ndarray:
        return self._nonzero[:, : self.n]

    def gather_resources(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(allocatable, requested, non-zero requested) of ``rows`` as contiguous resources × rows
        copies; taken from the backing arrays, which ``take`` reads faster than a sliced view."""
        return self._alloc.take(rows, 1), self._requested.take(rows, 1), self._nonzero.take(rows, 1)

    @property
    def pod_count(self) -> np.ndarray:
        return self._pod_count[: self.n]

    @property
    def alloc_pods(self) -> np.ndarray:
        return self._alloc_pods[: self.n]

    @property
    def unschedulable(self) -> np.ndarray:
        return self._unschedulable[: self.n]

    @property
    def taints(self) -> np.ndarray:
        return self._taints[: self.n]

    @property
    def declared_features(self) -> np.ndarray:
        return self._features[: self.n]

    def __len__(self) -> int:
        return self.n

    # -- growth ---------------------------------------------------------------------------
    def _grow_rows(self) -> None:
        cap = self._cap * 2

        def grow(a: np.ndarray, fill: Any = 0) -> np.ndarray:
            out = np.full((cap, *a.shape[1:]), fill, a.dtype)
            out[: self._cap] = a
            return out

        def grow_columns(a: np.ndarray) -> np.ndarray:
            out = np.zeros((a.shape[0], cap), a.dtype)
            out[:, : self._cap] = a
            return out

        self._alloc, self._requested = grow_columns(self._alloc), grow_columns(self._requested)
        self._nonzero, self._pod_count = grow_columns(self._nonzero), grow(self._pod_count)
        self._alloc_pods, self._unschedulable = grow(self._alloc_pods), grow(self._unschedulable)
        self._features = grow(self._features)
        self._taints = grow(self._taints)
        self._label_codes = {k: grow(v, -1) for k, v in self._label_codes.items()}
        self._image_size = {k: grow(v) for k, v in self._image_size.items()}
        self._cap = cap

    def resource_column(self, name: str) -> int:
        """Column of a resource, adding a zero column for a resource never seen before."""
        col = self.res_index.get(name)
        if col is None:
            col = len(self.res_names)
            self.res_names.append(name)
            self.res_index[name] = col
            pad = np.zeros((1, self._cap), np.int64)
            self._alloc = np.vstack([self._alloc, pad])
            self._requested = np.vstack([self._requested, pad])
            self.epoch += 1
        return col

    def _taint_id(self, taint: Taint) -> int:
        tid = self.taint_ids.get(taint)
        if tid is None:
            tid = len(self.taint_list)
            self.taint_ids[taint] = tid
            self.taint_list.append(taint)
            self._taints = np.hstack([self._taints, np.zeros((self._cap, 1), bool)])
        return tid

    def _label_code(self, key: str, value: str) -> int:
        values = self._label_values.setdefault(key, {})
        code = values.get(value)
        if code is None:
            code = values[value] = len(values)
        if key not in self._label_codes:
            self._label_codes[key] = np.full(self._cap, -1, np.int32)
        return code

    # -- nodes ----------------------------------------------------------------------------
    def add_node(self, spec: NodeSpecInfo) -> int:
        if self.n == self._cap:
            self._grow_rows()
        row = self.n
        self.n += 1
        self.names.append(spec.name)
        self.index[spec.name] = row
        self.specs.append(spec)
        self.node_ports.append(Counter())
        self._write_spec(row, spec, None)
        self._zones.setdefault(zone_key(spec.labels), []).append(spec.name)
        self._order = None
        self.generation += 1
        self.epoch += 1
        return row

    def update_node(self, spec: NodeSpecInfo) -> int:
        row = self.index[spec.name]
        old = self.specs[row]
        self.specs[row] = spec
        self._write_spec(row, spec, old)
        old_zone, new_zone = zone_key(old.labels), zone_key(spec.labels)
        if old_zone != new_zone:
            self._zones[old_zone].remove(spec.name)
            if not self._zones[old_zone]:
                del self._zones[old_zone]
            self._zones.setdefault(new_zone, []).append(spec.name)
            self._order = None
        self.generation += 1
        self.epoch += 1
        return row

    def _write_spec(self, row: int, spec: NodeSpecInfo, old: NodeSpecInfo | None) -> None:
        self._alloc[:, row] = 0
        for name, qty in spec.allocatable.items():
            if name == PODS:
                continue
            col = self.resource_column(name)
            self._alloc[col, row] = qty
        self._alloc_pods[row] = spec.allocatable.get(PODS, 0)
        self._unschedulable[row] = spec.unschedulable
        self._features[row] = mask_words(node_mask(spec.declared_features), self._features.shape[1])
        if old is not None:
            for key in old.labels:
                if key not in spec.labels:
                    self._label_codes[key][row] = -1
            for names, _size in old.images:
                for name in names:
                    self._image_size[name][row] = 0
                    self._image_nodes[name] -= 1
        for key, value in spec.labels.items():
            code = self._label_code(key, value)
            self._label_codes[key][row] = code
        self._label_ints.clear()
        self._taints[row] = False
        for taint in spec.taints:
            tid = self._taint_id(taint)
            self._taints[row, tid] = True
        for names, size in spec.images:
            for name in names:
                arr = self._image_size.get(name)
                if arr is None:
                    arr = self._image_size[name] = np.zeros(self._cap, np.int64)
                arr[row] = size
                self._image_nodes[name] += 1

    def remove_node(self, name: str) -> None:
        """Drop a node's row; later rows shift up by one."""
        row = self.index[name]
        spec = self.specs[row]
        for names, _ in spec.images:
            for img in names:
                self._image_nodes[img] -= 1
        keep = np.ones(self._cap, bool)
        keep[row] = False
        n_before = self.n

        def drop(a: np.ndarray) -> np.ndarray:
            out = np.zeros_like(a) if a.ndim > 1 or a.dtype != np.int32 else np.full_like(a, -1)
            out[: n_before - 1] = a[:n_before][keep[:n_before]]
            return out

        def drop_column(a: np.ndarray) -> np.ndarray:
            out = np.zeros_like(a)
            out[:, : n_before - 1] = a[:, :n_before][:, keep[:n_before]]
            return out

        self._alloc, self._requested = drop_column(self._alloc), drop_column(self._requested)
        self._nonzero, self._pod_count = drop_column(self._nonzero), drop(self._pod_count)
        self._alloc_pods, self._unschedulable = drop(self._alloc_pods), drop(self._unschedulable)
        self._features = drop(self._features)
        self._taints = drop(self._taints)
        self._label_codes = {k: drop(v) for k, v in self._label_codes.items()}
        self._image_size = {k: drop(v) for k, v in self._image_size.items()}
        self._label_ints.clear()
        # a new list, not one shortened in place: what holds the old one (a batch's sorted
        # nodes, by row) keeps the names as they were
        self.names = self.names[:row] + self.names[row + 1 :]
        del self.specs[row], self.node_ports[row]
        self.n -= 1
        self.index = {nm: i for i, nm in enumerate(self.names)}
        self._rebuild_port_index()
        zone = zone_key(spec.labels)
        self._zones[zone].remove(name)
        if not self._zones[zone]:
            del self._zones[zone]
        self._order = None
        self.generation += 1
        self.epoch += 1

    def order(self) -> np.ndarray:
        """Rows in nodeTree order: the zones' node lists interleaved round-robin."""
        if self._order is None:
            self._order_identity = None
            self._position = None
            zones = list(self._zones.values())
            out: list[int] = []
            depth = max((len(z) for z in zones), default=0)
            for i in range(depth):
                out.extend(self.index[z[i]] for z in zones if i < len(z))
            self._order = np.asarray(out, np.int64)
        return self._order

    def order_position(self) -> np.ndarray:
        """Each row's place in nodeTree order (the inverse of ``order()``)."""
        order = self.order()
        if self._position is None:
            position = np.empty(len(order), np.int64)
            position[order] = np.arange(len(order))
            self._position = position
        return self._position

    def order_is_identity(self) -> bool:
        """Whether nodeTree order is plain row order (one zone, or no zone labels)."""
        order = self.order()
        if self._order_identity is None:
            self._order_identity = bool(np.array_equal(order, np.arange(len(order))))
        return self._order_identity

    # -- pods -----------------------------------------------------------------------------
    def add_pod(self, row: int, pod: PodInfo, sign: int = 1) -> None:
        """Account a pod on a node (``NodeInfo.AddPod``); ``sign=-1`` removes it."""
        for name, qty in pod.requests.items():
            col = self.res_index.get(name)
            if col is None:
                col = self.resource_column(name)
            self._requested[col, row] += sign * qty
        self._nonzero[0, row] += sign * pod.non_zero_cpu
        self._nonzero[1, row] += sign * pod.non_zero_memory
        self._pod_count[row] += sign
        if pod.host_ports:
            self.account_ports(row, pod, sign)
        self.generation += 1
        self._log_change(row)

    def _log_change(self, row: int) -> None:
        changed = self.changed
        changed.append(row)
        if len(changed) > CHANGE_LOG_LIMIT + self.n:
            changed.clear()
            self.epoch += 1

    def add_pods_bulk(self, rows: np.ndarray, requests: np.ndarray, nonzero: np.ndarray, sign: int = 1) -> None:
        """Account many pods at once (``rows[i]`` gets the pod of column i of ``requests``, a
        resources × pods matrix aligned with the table's resource columns). Host ports are not
        touched: use ``account_ports`` for pods that have them."""
        k = self._requested.shape[0]
        # resources × rows: add each pod's column to its row's column (rows may repeat)
        np.add.at(self._requested.T, rows, (sign * requests[:k]).T)
        np.add.at(self._nonzero.T, rows, (sign * nonzero).T)
        np.add.at(self._pod_count, rows, sign)
        self.generation += 1
        for row in rows.tolist():
            self._log_change(row)

    def account_ports(self, row: int, pod: PodInfo, sign: int) -> None:
        """The host ports part of ``add_pod``. A node's used ports are a set, as upstream's
        ``HostPortInfo``: a pod's ports are added if absent and removed outright, so removing one
        of two pods bound to the same port (placed by another component) frees it for the
        scheduler, in its cache and in preemption's dry run, as kube-scheduler's ``RemovePod``."""
        if pod.host_ports:
            counts = self._port_index()  # built (if it was dropped) before this pod's ports change
            if self._ports_shared and row not in self._ports_owned:
                self.node_ports[row] = Counter(self.node_ports[row])
                self._ports_owned.add(row)
            used = self.node_ports[row]
            for hp in pod.host_ports:
                triple = (hp.ip, hp.protocol, hp.port)
                if (triple in used) == (sign > 0):
                    continue  # already there, or already gone
                if sign > 0:
                    used[triple] = 1
                else:
                    del used[triple]
                self._count_port(counts, row, hp.protocol, hp.port, hp.ip, 1 if sign > 0 else -1)

    def _count_port(
        self, counts: dict[PortKey, dict[str, np.ndarray]], row: int, proto: str, port: int, ip: str, n: int
    ) -> None:
        by_ip = counts.setdefault((proto, port), {})
        for key in (ANY_USE, ip):
            arr = by_ip.get(key)
            if arr is None or len(arr) <= row:
                arr = by_ip[key] = _padded(arr, self._cap)
            arr[row] += n

    def _port_index(self) -> dict[PortKey, dict[str, np.ndarray]]:
        if self._port_counts is None:
            counts: dict[PortKey, dict[str, np.ndarray]] = {}
            for row, used in enumerate(self.node_ports):
                for (ip, proto, port), n in used.items():
                    self._count_port(counts, row, proto, port, ip, n)
            self._port_counts = counts
        return self._port_counts

    def port_uses(self, protocol: str, port: int, ip: str) -> np.ndarray | None:
        """Per row, how many pods use ``protocol``/``port`` on host IP ``ip`` (``ANY_USE``: on any
        IP); None when no pod does. NodePorts' vectorized conflict check reads these."""
        arr = self._port_index().get((protocol, port), {}).get(ip)
        if arr is None:
            return None
        return arr[: self.n] if len(arr) >= self.n else _padded(arr, self.n)[: self.n]

    def _rebuild_port_index(self) -> None:
        self._port_counts = None

    # -- label queries ----------------------------------------------------------------------
    def label_codes(self, key: str) -> np.ndarray | None:
        codes = self._label_codes.get(key)
        return None if codes is None else codes[: self.n]

    def label_unique(self, key: str) -> bool:
        """Whether no two nodes share a value of label ``key`` (each node its own topology domain,
        as kubernetes.io/hostname is meant to be); kept until the nodes change."""
        cached = self._label_unique.get(key)
        if cached is not None and cached[0] == self.epoch:
            return cached[1]
        codes = self.label_codes(key)
        if codes is None:
            unique = True
        else:
            present = codes[codes >= 0]
            unique = len(np.unique(present)) == len(present)
        self._label_unique[key] = (self.epoch, unique)
        return unique

    def least_alloc(self) -> list[int]:
        """The least allocatable cpu, memory and ephemeral-storage over the nodes (0 without
        nodes); kept until the nodes change."""
        kept = self._least_alloc
        if kept is not None and kept[0] == self.epoch:
            return kept[1]
        least = np.minimum.reduce(self.alloc[:3], axis=1).tolist() if self.n else [0, 0, 0]
        self._least_alloc = (self.epoch, least)
        return least

    def label_value_code(self, key: str, value: str) -> int:
        return self._label_values.get(key, {}).get(value, -2)

    def label_values(self, key: str) -> dict[str, int]:
        return self._label_values.get(key, {})

    def _label_int_column(self, key: str) -> np.ndarray:
        cached = self._label_ints.get(key)
        if cached is not None and cached[0] == self.generation:
            return cached[1]
        codes = self.label_codes(key)
        if codes is None:
            out = np.full(self.n, np.nan)
        else:
            lut = np.full(len(self._label_values[key]) + 1, np.nan)
            for value, code in self._label_values[key].items():
                with contextlib.suppress(ValueError):
                    lut[code] = int(value)
            out = lut[codes]  # code -1 reads the trailing NaN
        self._label_ints[key] = (self.generation, out)
        return out

    def match_requirement(self, req: Requirement) -> np.ndarray:
        """Vectorized ``NodeSelectorRequirement`` over all rows."""
        if req.key == NAME_FIELD and req.operator in ("In", "NotIn"):
            mask = np.zeros(self.n, bool)
            rows = [self.index[v] for v in req.values if v in self.index]
            mask[rows] = True
            return mask if req.operator == "In" else ~mask
        codes = self.label_codes(req.key)
        op = req.operator
        if codes is None:
            return np.full(self.n, op in ("NotIn", "DoesNotExist"))
        if op == "Exists":
            return codes >= 0
        if op == "DoesNotExist":
            return codes < 0
        if op in ("In", "NotIn"):
            wanted = [c for v in req.values if (c := self.label_value_code(req.key, v)) >= 0]
            mask = np.isin(codes, wanted) if wanted else np.zeros(self.n, bool)
            return mask if op == "In" else ~mask
        ints = self._label_int_column(req.key)
        bound = int(req.values[0])
        with np.errstate(invalid="ignore"):
            return ints > bound if op == "Gt" else ints < bound

    # -- images ---------------------------------------------------------------------------
    def image_sizes(self, image: str) -> tuple[np.ndarray, int] | None:
        """(size per row, number of nodes with the image) or None when no node has it."""
        arr = self._image_size.get(image)
        count = self._image_nodes.get(image, 0)
        if arr is None or count <= 0:
            return None
        return arr[: self.n], count

    # -- subsets ----------------------------------------------------------------------------
    def take(self, rows: Sequence[int] | np.ndarray) -> NodeTable:
        """A copy holding only ``rows`` (for per-node what-ifs: nominated pods, preemption)."""
        rows = np.asarray(rows, np.int64)
        row_list = rows.tolist()
        sub = NodeTable.__new__(NodeTable)
        sub.n = sub._cap = len(rows)
        sub.names = [self.names[r] for r in row_list]
        sub.index = {nm: i for i, nm in enumerate(sub.names)}
        sub.res_names, sub.res_index = list(self.res_names), dict(self.res_index)
        sub._alloc, sub._requested = self._alloc.take(rows, 1), self._requested.take(rows, 1)
        sub._nonzero, sub._pod_count = self._nonzero.take(rows, 1), self._pod_count[rows].copy()
        sub._alloc_pods, sub._unschedulable = self._alloc_pods[rows].copy(), self._unschedulable[rows].copy()
        sub._features = self._features[rows].copy()
        sub.specs = [self.specs[r] for r in row_list]
        sub._label_values = self._label_values
        sub._label_codes = {k: v[rows].copy() for k, v in self._label_codes.items()}
        sub._label_ints = {}
        sub.taint_ids, sub.taint_list = self.taint_ids, self.taint_list
        sub._taints = self._taints[rows].copy()
        sub._image_size = {k: v[rows].copy() for k, v in self._image_size.items()}
        sub._image_nodes = self._image_nodes
        # shared until written: account_ports copies a row's counter before changing it
        sub.node_ports = [self.node_ports[r] for r in row_list]
        sub._ports_shared = True
        sub._ports_owned = set()
        sub._rebuild_port_index()
        sub._zones = {"": list(sub.names)}
        sub._order = None
        sub._order_identity = None
        sub.generation = self.generation
        sub.changed, sub.epoch, sub._position, sub._label_unique = [], 0, None, {}
        sub._least_alloc = None
        sub.total_nodes = self.n
        return sub

    total_nodes: int = -1
    _ports_shared: bool = False  # node_ports rows borrowed from the parent table (see take)
    _ports_owned: set[int] = set()  # noqa: RUF012 - replaced per instance by take()

    @property
    def cluster_size(self) -> int:
        """Number of nodes in the whole cluster (a subset remembers its parent's)."""
        return self.total_nodes if self.total_nodes >= 0 else self.n


ANY_USE = "*"  # port_uses key: on any host IP


def _padded(arr: np.ndarray | None, size: int) -> np.ndarray:
    """``arr`` (or nothing) zero-padded to ``size`` rows."""
    out = np.zeros(max(size, 1), np.int32)
    if arr is not None:
        out[: len(arr)] = arr[:size]
    return out
