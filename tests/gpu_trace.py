"""Small GPU clusters and workloads in the Alibaba trace's CSV format, for replay tests (the real
trace is not part of the repository)."""

from __future__ import annotations

import csv
import random
from pathlib import Path

NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
POD_HEADER = [
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
    "creation_time", "deletion_time", "scheduled_time",
]  # fmt: skip

# (cpu_milli, memory_mib, gpus, model): a small heterogeneous cluster
NODES = [
    (96000, 393216, 8, "G2"),
    (96000, 393216, 8, "G2"),
    (64000, 262144, 2, "T4"),
    (64000, 262144, 2, "T4"),
    (64000, 262144, 4, "V100M16"),
    (32000, 131072, 0, ""),
]
# request shapes with weights: (cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec)
SHAPES = [
    ((4000, 15258, 1, 460, ""), 6),
    ((6000, 12288, 1, 1000, ""), 5),
    ((8000, 30000, 1, 250, ""), 3),
    ((12000, 24576, 2, 1000, ""), 2),
    ((2000, 4096, 0, 0, ""), 3),
    ((16000, 65536, 1, 1000, "T4"), 1),
    ((48000, 196608, 8, 1000, ""), 1),
]


def write_nodes(path: Path, nodes: list[tuple[int, int, int, str]] = NODES * 4) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(NODE_HEADER)
        for i, (cpu, mem, gpu, model) in enumerate(nodes):
            w.writerow([f"node-{i:02d}", cpu, mem, gpu, model])
    return path


def write_pods(path: Path, n: int = 60, seed: int = 0, *, span: int = 1000, life: int = 300) -> Path:
    rng = random.Random(seed)
    shapes = [s for s, _ in SHAPES]
    weights = [w for _, w in SHAPES]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(POD_HEADER)
        t = 0
        for i in range(n):
            cpu, mem, gpus, milli, spec = rng.choices(shapes, weights)[0]
            t += rng.randrange(span // n + 1)
            w.writerow([f"pod-{i:04d}", cpu, mem, gpus, milli, spec, "LS", "Running", t, t + rng.randrange(1, life), t])
    return path
