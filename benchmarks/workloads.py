"""A Deployment on hollow nodes, as ``kubesched up`` runs it: the workload controllers, the
scheduler and the hollow kubelet in one process (``kubesched.testing.Cluster(workloads=True)``,
the API server's admission included, on a virtual clock so no time is waited for).

    python benchmarks/workloads.py [--nodes 1000] [--replicas 1000]

Prints the wall time and pods/s for (1) the Deployment from creation to every replica Running
and available, and (2) a rolling update (maxSurge 25%, maxUnavailable 25%) from the template
change to the rollout complete (every pod replaced), and the process's peak RSS.

``--live`` runs the same through a real ``kubesched up`` process (SQLite, HTTPS, wall clock) and the
kubectl on the PATH: ``kubectl create deployment`` / ``set image`` timed to ``kubectl rollout
status`` returning.
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

from kubesched.kubelet.node import fake_node
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


def live(nodes: int, replicas: int) -> None:
    """Through ``kubesched up`` and kubectl, as a user would time it."""
    import os
    import shutil
    import socket
    import subprocess
    import tempfile

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        sys.exit("--live needs kubectl on the PATH")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = Path(tempfile.mkdtemp(prefix="kubesched-bench-"))
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubesched.cli",
            "up",
            "--data-dir",
            str(data),
            "--port",
            str(port),
            "--nodes",
            str(nodes),
            "--ui-port",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = {**os.environ, "KUBECONFIG": str(data / "kubeconfig"), "HOME": str(data)}

    def k(*a: str) -> None:
        subprocess.run([kubectl, *a], env=env, check=True, capture_output=True, timeout=1800)

    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if (data / "kubeconfig").exists() and subprocess.run(
                [kubectl, "get", "--raw", "/readyz"], env=env, capture_output=True
            ).returncode == 0:
                break
            time.sleep(0.2)
        start = time.perf_counter()
        k("create", "deployment", "web", "--image=nginx:1", f"--replicas={replicas}")
        k("rollout", "status", "deployment/web", "--timeout=30m")
        created = time.perf_counter() - start
        start = time.perf_counter()
        k("set", "image", "deployment/web", "nginx=nginx:2")
        k("rollout", "status", "deployment/web", "--timeout=30m")
        rolled = time.perf_counter() - start
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(data, ignore_errors=True)
    print(f"machine: {platform.machine()}, python {platform.python_version()}; kubesched up + {kubectl}")
    print(
        f"kubectl create deployment ({replicas} replicas, {nodes} nodes) to rollout status: {created:.1f}s "
        f"({replicas / created:,.0f} pods/s)"
    )
    print(f"kubectl set image to rollout status: {rolled:.1f}s ({replicas / rolled:,.0f} pods/s replaced)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--replicas", type=int, default=1000)
    ap.add_argument("--live", action="store_true", help="through a kubesched up process and kubectl")
    args = ap.parse_args()
    if args.live:
        live(args.nodes, args.replicas)
        return
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
