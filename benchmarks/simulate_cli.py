"""``kubesched simulate`` end to end on a large input, phase by phase: writing the manifests is
not measured; loading and validating them, scheduling, and rendering the table (plain past 500
pods) and the JSON are.

    python benchmarks/simulate_cli.py --nodes 5000 --pods 20000

The last line printed is JSON: nodes, pods, and seconds per phase.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kubesched.simulate.output import print_result, to_json
from kubesched.simulate.runner import simulate


def manifests(nodes: int, pods: int) -> list[dict]:
    docs: list[dict] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}]
    for i in range(nodes):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
                "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
            }
        )
    for i in range(pods):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{i}", "namespace": "bench"},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                        }
                    ]
                },
            }
        )
    return docs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=20000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "cluster.yaml"
        path.write_text(yaml.safe_dump_all(manifests(args.nodes, args.pods)))
        started = time.perf_counter()
        result = simulate([str(path)])
        total = time.perf_counter() - started
    scheduling = result.timing["wallSeconds"]
    t = time.perf_counter()
    print_result(result, io.StringIO(), fmt="table")
    table = time.perf_counter() - t
    t = time.perf_counter()
    to_json(result)
    as_json = time.perf_counter() - t
    out = {
        "nodes": args.nodes,
        "pods": args.pods,
        "load_and_create_seconds": round(total - scheduling, 2),
        "scheduling_seconds": round(scheduling, 2),
        "table_seconds": round(table, 2),
        "json_seconds": round(as_json, 2),
        "bound": result.stats["bound"],
    }
    print(json.dumps(out), file=sys.stdout)


if __name__ == "__main__":
    main()
