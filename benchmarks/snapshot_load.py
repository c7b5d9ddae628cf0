"""How long a snapshot of a large cluster takes to read and to load: ``kubesched apiserver`` holds N
nodes and M bound pods (a twentieth of them finished), ``kubesched snapshot`` reads it page by page
into a file (JSON, and YAML with ``--yaml``), and ``kubesched simulate SNAPSHOT --summary`` loads it
(decode, validate as creates, build the cluster and the scheduler's cache, try the pending pods).
Each step is a process of its own, timed wall clock with its peak resident memory (``wait4``).

    python benchmarks/snapshot_load.py --nodes 5000 --pods 100000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import orjson

from apiserver_process import KUBESCHED, free_port


def manifest(nodes: int, pods: int, path: Path) -> None:
    """The cluster as one List: nodes of 32 CPU in 3 zones, pods bound round-robin in 10 namespaces."""
    alloc = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    ready = [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    ]
    items: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{t}"}} for t in range(10)
    ]
    for i in range(nodes):
        labels = {"kubernetes.io/hostname": f"node-{i}", "topology.kubernetes.io/zone": f"zone-{i % 3}"}
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}", "labels": labels},
                "status": {"capacity": alloc, "allocatable": alloc, "conditions": ready},
            }
        )
    for j in range(pods):
        finished = j % 20 == 0
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{j}", "namespace": f"team-{j % 10}", "labels": {"app": f"app-{j % 100}"}},
                "spec": {
                    "nodeName": f"node-{j % nodes}",
                    "containers": [
                        {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}}
                    ],
                },
                **({"status": {"phase": "Succeeded"}} if finished else {}),
            }
        )
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak resident MiB and standard error of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024, err


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--page", type=int, default=500)
    parser.add_argument("--yaml", action="store_true", help="also write and load the YAML form")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kubesched-snapshot-"))
    data = root / "data"
    manifest(args.nodes, args.pods, root / "cluster.json")
    started = time.perf_counter()
    up = [*KUBESCHED, "apiserver", str(root / "cluster.json"), "--data-dir", str(data), "--port", str(free_port())]
    # no kubelet heartbeats the nodes: without the node lifecycle controller they stay Ready (else it
    # taints them after 50 s and evicts every pod, a churn no snapshot of a real cluster meets)
    quiet = ["--no-kubelet", "--controllers", "*,-node-lifecycle"]
    subprocess.run([*up, *quiet, "--detach"], check=True, stdout=subprocess.DEVNULL)
    results: dict[str, object] = {
        "nodes": args.nodes,
        "pods": args.pods,
        "serverUpSeconds": round(time.perf_counter() - started, 1),
    }
    try:
        forms = ["json", "yaml"] if args.yaml else ["json"]
        for form in forms:
            snap = root / f"snapshot.{form}"
            cmd = [*KUBESCHED, "snapshot", "--kubeconfig", str(data / "kubeconfig"), "-o", str(snap), "--quiet"]
            wall, rss, _ = timed([*cmd, "--page", str(args.page)])
            results[f"{form}Read"] = {
                "seconds": round(wall, 1),
                "peakMiB": round(rss),
                "MiB": snap.stat().st_size >> 20,
            }
            wall, rss, _ = timed([*KUBESCHED, "simulate", str(snap), "--summary"])
            results[f"{form}Load"] = {"seconds": round(wall, 1), "peakMiB": round(rss)}
            print(f"{form}: read {results[f'{form}Read']}, load {results[f'{form}Load']}", flush=True)
    finally:
        subprocess.run([*KUBESCHED, "down", "--data-dir", str(data)], stdout=subprocess.DEVNULL, check=False)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
