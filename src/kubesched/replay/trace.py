"""Workloads and clusters for ``kubesched replay``: Alibaba's GPU trace and a generic format.

- Alibaba cluster-trace-gpu-v2023 ("openb"): node CSV ``sn,cpu_milli,memory_mib,gpu,model`` and pod
  CSV ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
  deletion_time,scheduled_time`` (the ``multigpu`` variants have the first five columns only). Rows
  become Nodes and Pods as the paper's simulator makes them (``data/pod_csv_to_yaml.py``): requests =
  limits of cpu and memory, GPU asks in annotations (``kubesched.gpus.sharing``).
- Generic: JSON Lines, one pod per line, ``{"time": seconds, "duration": seconds (optional),
  "pod": {a v1 Pod}}``; a pod without a duration stays until the end.

Every error names the file, the line and the column or field.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.errors import InputError
from kubesched.gpus.sharing import GPU_COUNT, GPU_MILLI, GPU_MODEL, MILLI

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
NODE_PODS = "1001"  # the simulator's node template
DEFAULT_NAMESPACE = "openb"
IMAGE = "registry.k8s.io/pause:3.10"


@dataclass(slots=True)
class Arrival:
    """A pod of the workload: created at ``time``, deleted at ``deletion`` (None: never)."""

    time: float
    deletion: float | None
    pod: dict[str, Any]


TRACE_HINT = (
    "; files named openb_* are Alibaba's GPU trace (cluster-trace-gpu-v2023), which kubesched does not ship: "
    "docs/trace.md says where to get it, and examples/replay/ has a small workload in its format"
)


def unreadable(path: Path, exc: OSError) -> InputError:
    """A workload or cluster file that cannot be read; the trace's own files say where to get them."""
    hint = TRACE_HINT if path.name.startswith("openb_") and not path.exists() else ""
    return InputError(f"cannot read: {exc.strerror}{hint}", file=str(path))


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        f = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise unreadable(path, exc) from None
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(
                f"missing column(s) {', '.join(missing)} (have: {', '.join(header) or 'none'})", file=str(path)
            )
        yield from enumerate(reader, start=2)


def _int(path: Path, line: int, row: dict[str, str], column: str, default: int | None = None) -> int:
    raw = (row.get(column) or "").strip()
    if raw == "" and default is not None:
        return default
    try:
        value = int(float(raw)) if raw and raw.lower() != "nan" else int(raw)
    except ValueError:
        raise InputError(f"line {line}: column {column}: {raw!r} is not a number", file=str(path)) from None
    if value < 0:
        raise InputError(f"line {line}: column {column}: {raw!r} must not be negative", file=str(path))
    return value


def _unique_name(path: Path, line: int, row: dict[str, str], column: str, what: str, seen: set[str]) -> str:
    name = (row.get(column) or "").strip()
    if not name:
        raise InputError(f"line {line}: column {column}: empty {what} name", file=str(path))
    if name in seen:
        raise InputError(f"line {line}: {what} {name!r} appears twice", file=str(path))
    seen.add(name)
    return name


def is_node_csv(path: str | Path) -> bool:
    p = Path(path)
    if p.suffix.lower() != ".csv" or not p.is_file():
        return False
    with p.open(encoding="utf-8") as f:
        header = f.readline().strip().split(",")
    return all(c in header for c in NODE_COLUMNS)


def load_nodes_csv(path: str | Path) -> list[dict[str, Any]]:
    """Nodes of the trace's node list: allocatable cpu, memory, pods and GPUs, the model label."""
    p = Path(path)
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line, row in _rows(p, NODE_COLUMNS):
        name = _unique_name(p, line, row, "sn", "node", seen)
        gpus = _int(p, line, row, "gpu", 0)
        model = (row.get("model") or "").strip()
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        alloc = {
            "cpu": f"{_int(p, line, row, 'cpu_milli')}m",
            "memory": f"{_int(p, line, row, 'memory_mib')}Mi",
            "pods": NODE_PODS,
        }
        if gpus:
            labels[GPU_MODEL] = model
            alloc[GPU_COUNT] = str(gpus)
            alloc[GPU_MILLI] = str(gpus * MILLI)
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "status": {"allocatable": alloc, "capacity": dict(alloc)},
            }
        )
    if not nodes:
        raise InputError("no nodes", file=str(p))
    return nodes


def trace_pod(
    name: str, cpu_milli: int, memory_mib: int, gpus: int, milli: int, spec: str, namespace: str
) -> dict[str, Any]:
    """A pod as the paper's simulator writes a trace row (``generate_pod_yaml``)."""
    requests = {"cpu": f"{cpu_milli}m", "memory": f"{memory_mib}Mi"}
    annotations: dict[str, str] = {}
    if gpus:
        annotations[GPU_MILLI] = str(milli if 0 < milli <= MILLI else MILLI if milli > MILLI else 0)
        annotations[GPU_COUNT] = str(gpus)
        models = "|".join(m for m in spec.split("|") if m and m.lower() != "nan")
        if models:
            annotations[GPU_MODEL] = models
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [
                {"name": "main", "image": IMAGE, "resources": {"requests": requests, "limits": dict(requests)}}
            ]
        },
    }


def load_pods_csv(path: str | Path, namespace: str = DEFAULT_NAMESPACE) -> list[Arrival]:
    """The trace's pod list in file order, with creation and deletion times when the file has them."""
    p = Path(path)
    out: list[Arrival] = []
    seen: set[str] = set()
    for line, row in _rows(p, POD_COLUMNS):
        name = _unique_name(p, line, row, "name", "pod", seen)
        gpus = _int(p, line, row, "num_gpu", 0)
        milli = _int(p, line, row, "gpu_milli", 0)
        if gpus > 8:
            raise InputError(f"line {line}: column num_gpu: {gpus} is more than a node has (8)", file=str(p))
        pod = trace_pod(
            name,
            _int(p, line, row, "cpu_milli"),
            _int(p, line, row, "memory_mib", 0),
            gpus,
            milli,
            (row.get("gpu_spec") or "").strip(),
            namespace,
        )
        created = float(_int(p, line, row, "creation_time", 0)) if "creation_time" in row else 0.0
        deleted: float | None = None
        if (row.get("deletion_time") or "").strip():
            deleted = float(_int(p, line, row, "deletion_time"))
            if deleted < created:
                raise InputError(f"line {line}: deletion_time is before creation_time", file=str(p))
        out.append(Arrival(created, deleted, pod))
    if not out:
        raise InputError("no pods", file=str(p))
    return out


def load_jsonl(path: str | Path) -> list[Arrival]:
    """The generic workload: one ``{"time", "duration"?, "pod"}`` object per line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise unreadable(p, exc) from None
    out: list[Arrival] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"line {line}: not JSON: {exc.msg}", file=str(p)) from None
        if not isinstance(rec, dict):
            raise InputError(f"line {line}: expected an object with time and pod", file=str(p))
        pod = rec.get("pod")
        if not isinstance(pod, dict):
            raise InputError(f"line {line}: field pod: expected a v1 Pod object", file=str(p))
        pod = {"apiVersion": "v1", "kind": "Pod", **pod}
        if pod.get("kind") != "Pod":
            raise InputError(f"line {line}: field pod.kind: expected Pod, got {pod.get('kind')!r}", file=str(p))
        when = _number(p, line, rec, "time", 0.0)
        duration = rec.get("duration")
        deletion = None if duration is None else when + _number(p, line, rec, "duration", 0.0)
        out.append(Arrival(when, deletion, pod))
    if not out:
        raise InputError("no pods", file=str(p))
    return out


def _number(path: Path, line: int, rec: dict[str, Any], key: str, default: float) -> float:
    raw = rec.get(key, default)
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0 or raw != raw:
        raise InputError(
            f"line {line}: field {key}: expected a non-negative number of seconds, got {raw!r}", file=str(path)
        )
    return float(raw)


def load_workload(path: str | Path, namespace: str = DEFAULT_NAMESPACE) -> list[Arrival]:
    p = Path(path)
    if p.suffix.lower() == ".csv":
        return load_pods_csv(p, namespace)
    if p.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return load_jsonl(p)
    raise InputError("a workload is a trace pod CSV (.csv) or JSON Lines of pods (.jsonl)", file=str(p))
