"""A Deployment on hollow nodes, as ``kubesched up`` runs it: the workload controllers, the
scheduler and the hollow kubelet in one process (``kubesched.testing.Cluster(workloads=True)``,
the API server's admission included, on a virtual clock so no time is waited for).

    python benchmarks/workloads.py [--nodes 1000] [--replicas 1000]

Prints the wall time and pods/s for (1) the Deployment from creation to every replica Running
and available, and (2) a rolling update (maxSurge 25%, maxUnavailable 25%) from the template
change to the rollout complete (every pod replaced), and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kubesched.apiserver.kubelet import fake_node
from kubesched.testing import Cluster


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1", "resources": {"requests": {"cpu": "100m"}}}]},
            },
        },
    }


def done(c: Cluster, image: str, replicas: int) -> bool:
    d = c.store.get("Deployment", "default", "web")
    st = d.get("status") or {}
    if st.get("observedGeneration") != d["metadata"]["generation"]:
        return False
    if (st.get("updatedReplicas"), st.get("replicas"), st.get("availableReplicas")) != (replicas,) * 3:
        return False
    pods = [p for p in c.store.list("Pod")[0] if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == replicas and all(
        p["status"].get("phase") == "Running" and p["spec"]["containers"][0]["image"] == image for p in pods
    )


def run_until(c: Cluster, image: str, replicas: int) -> float:
    start = time.perf_counter()
    c.settle()
    while not done(c, image, replicas):
        c.advance(1)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--replicas", type=int, default=1000)
    args = ap.parse_args()
    c = Cluster(*[{**fake_node(f"node-{i}"), "kind": "Node"} for i in range(args.nodes)], workloads=True)
    c.settle()
    c.create(deployment(args.replicas))
    created = run_until(c, "nginx:1", args.replicas)

    def new_image(o: dict[str, Any]) -> dict[str, Any]:
        t = o["spec"]["template"]
        containers = [{**t["spec"]["containers"][0], "image": "nginx:2"}]
        return {**o, "spec": {**o["spec"], "template": {**t, "spec": {**t["spec"], "containers": containers}}}}

    c.store.mutate("Deployment", "default", "web", new_image)
    rolled = run_until(c, "nginx:2", args.replicas)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"machine: {platform.machine()} {platform.processor() or ''}, python {platform.python_version()}")
    print(
        f"Deployment of {args.replicas} on {args.nodes} hollow nodes, created to all Running: {created:.2f}s "
        f"({args.replicas / created:,.0f} pods/s)"
    )
    print(f"rolling update (25%/25%) to complete: {rolled:.2f}s ({args.replicas / rolled:,.0f} pods/s replaced)")
    print(f"peak RSS: {rss:,.0f} MiB")


if __name__ == "__main__":
    main()
