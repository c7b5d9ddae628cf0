"""What each node holds at the end of a run, for the planner's report: its node pool, zone and
GPU model, and per resource its allocatable and what its pods request, in the units a planner
reads (cores, GiB, GPUs, pods). Read from the scheduler cache's columns, as NodeResourcesFit
sees them."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubesched.gpus.sharing import GPU_COUNT, GPU_MILLI, GPU_MODEL, GpuLedger
from kubesched.scheduler.nodetable import ZONE_LABELS, NodeTable

# the node-pool labels of Karpenter, GKE, EKS and AKS, then the instance type (a pool's usual key)
POOL_LABELS = (
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)
# the GPU model: the FGD trace's label, NVIDIA GPU feature discovery's, GKE's accelerator
GPU_MODEL_LABELS = (GPU_MODEL, "nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")
GIB = float(1 << 30)
GPUS = "GPU"  # the replay's GPUs, as the GPU-sharing ledger counts them (shares included)


def unit_of(resource: str) -> tuple[str, float]:
    """A resource's display unit and the factor from its column's integer to it."""
    if resource == "cpu":
        return "cores", 1e-3
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return "GiB", 1 / GIB
    if resource == "pods":
        return "pods", 1.0
    if resource == GPUS or resource.endswith("/gpu"):
        return "GPUs", 1.0
    return "units", 1.0


def first_label(labels: Mapping[str, str], keys: tuple[str, ...]) -> str:
    return next((labels[k] for k in keys if labels.get(k)), "")


def node_usage(table: NodeTable, ledger: GpuLedger | None = None) -> list[dict[str, object]]:
    """One entry per node: name, pool, zone, gpuModel, and ``allocatable`` / ``requested`` per
    resource in display units (``unit_of``). With the replay's ``ledger``, its GPUs (shares
    counted as fractions) replace the GPU-sharing annotations' resources, which no request names."""
    n = table.n
    columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for i, res in enumerate(table.res_names):
        if ledger is not None and res in (GPU_COUNT, GPU_MILLI):
            continue
        alloc = table.alloc[i]
        if not alloc.any():
            continue
        _, scale = unit_of(res)
        columns[res] = (alloc * scale, table.requested[i] * scale)
    columns["pods"] = (table.alloc_pods.astype(float), table.pod_count.astype(float))
    if ledger is not None and ledger.gpu_count.any():
        rows = np.array([ledger.row.get(name, -1) for name in table.names], np.int64)
        have = rows >= 0
        gpus = np.zeros(n)
        used = np.zeros(n)
        gpus[have] = ledger.gpu_count[rows[have]]
        used[have] = gpus[have] - ledger.gpu_left[rows[have]].sum(axis=1) / 1000
        columns[GPUS] = (gpus, used)
    lists = {res: (a.tolist(), r.tolist()) for res, (a, r) in columns.items()}
    out: list[dict[str, object]] = []
    for row, name in enumerate(table.names):
        labels = table.specs[row].labels
        out.append(
            {
                "name": name,
                "pool": first_label(labels, POOL_LABELS),
                "zone": first_label(labels, ZONE_LABELS),
                "gpuModel": first_label(labels, GPU_MODEL_LABELS),
                "allocatable": {res: round(a[row], 3) for res, (a, _) in lists.items()},
                "requested": {res: round(r[row], 3) for res, (_, r) in lists.items()},
            }
        )
    return out
