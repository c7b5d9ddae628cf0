"""What a plugin sees of the nodes: ``NodeTableView``, the read-only face of kubesched's columnar
node table (upstream's NodeInfo list as numpy columns over nodes, one row per node), and
``NodeInfo``, the per-node view that per-node plugins receive (upstream's ``fwk.NodeInfo``).

Columns are indexed ``[resource, row]`` for resources and ``[row]`` otherwise; a plugin reads
them and never writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo
from kubesched.api.selectors import Requirement, Taint


class NodeTableView(Protocol):
    """The node table as Filter, Score and PreScore plugins receive it."""

    n: int  # rows
    names: list[str]  # node name of each row
    index: dict[str, int]  # node name → row
    res_names: list[str]  # resource of each resource row (cpu, memory, ephemeral-storage, scalars)
    res_index: dict[str, int]
    specs: list[NodeSpecInfo]  # the parsed Node of each row
    taint_list: list[Taint]  # the taint of each column of ``taints``
    generation: int  # bumped on every change

    @property
    def alloc(self) -> np.ndarray: ...  # int64 [resource, row]: allocatable (cpu in millicores)

    @property
    def requested(self) -> np.ndarray: ...  # int64 [resource, row]: sum of the pods' requests

    @property
    def nonzero_requested(self) -> np.ndarray: ...  # int64 [cpu/memory, row], with upstream's defaults

    @property
    def pod_count(self) -> np.ndarray: ...

    @property
    def alloc_pods(self) -> np.ndarray: ...

    @property
    def unschedulable(self) -> np.ndarray: ...

    @property
    def taints(self) -> np.ndarray: ...  # bool [row, taint]

    @property
    def declared_features(self) -> np.ndarray: ...  # uint64 [row, word]: status.declaredFeatures as a bitmask

    def __len__(self) -> int: ...

    def label_codes(self, key: str) -> np.ndarray | None:
        """int32 code of the label ``key``'s value per row (-1: no such label); None when no node
        has it."""
        ...

    def label_value_code(self, key: str, value: str) -> int:
        """The code ``label_codes(key)`` gives rows whose label ``key`` is ``value``; -2 when no
        node has that value (no row's code equals it)."""
        ...

    def label_values(self, key: str) -> dict[str, int]:
        """Every value the label ``key`` takes on some node, with its code in ``label_codes``
        (read only; empty when no node has the label)."""
        ...

    def match_requirement(self, req: Requirement) -> np.ndarray:
        """bool per row: the node's labels satisfy a node selector requirement."""
        ...

    def image_sizes(self, image: str) -> tuple[np.ndarray, int] | None: ...

    def label_unique(self, key: str) -> bool:
        """No two nodes share a value of label ``key``."""
        ...

    def gather_resources(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(allocatable, requested, non-zero requested) of ``rows``, resources × rows copies."""
        ...

    def port_uses(self, protocol: str, port: int, ip: str) -> np.ndarray | None:
        """Per row, how many pods use the host port ``protocol``/``port`` on ``ip``; None when none do."""
        ...

    @property
    def cluster_size(self) -> int:
        """Nodes in the whole cluster (a table of some rows remembers its parent's)."""
        ...

    def order(self) -> np.ndarray:
        """Rows in upstream's nodeTree order (zones interleaved)."""
        ...


@dataclass(slots=True)
class NodeInfo:
    """A per-node view for per-node plugins: the Node object, its pods and its resource sums."""

    node: dict[str, Any]
    name: str
    labels: dict[str, str]
    pods: list[PodInfo]
    allocatable: dict[str, int]
    requested: dict[str, int]
    extra: dict[str, Any] = field(default_factory=dict)
