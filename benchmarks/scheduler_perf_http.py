"""SchedulingBasic through HTTP: an API server and a scheduler as separate processes, nodes and
pods created by a client over HTTPS, as upstream's scheduler_perf runs kube-scheduler against a
real kube-apiserver. ``--stack`` picks the two:

- ``kubesched``: ``kubesched apiserver`` and ``kubesched scheduler``;
- ``upstream``: etcd, kube-apiserver and kube-scheduler v1.37.2 (built by ``scripts/build_upstream.sh``);
- ``mixed``: ``kubesched scheduler`` against etcd and kube-apiserver v1.37.2.

    python benchmarks/scheduler_perf_http.py --nodes 5000 --init-pods 1000 --pods 10000
    python benchmarks/scheduler_perf_http.py --stack upstream --nodes 5000 --init-pods 1000 --pods 10000
    python benchmarks/scheduler_perf_http.py --stack mixed --write-results

The client creates the nodes (``templates/node-default.yaml``), then the init pods, waits until
they are bound, then creates the measured pods (``templates/pod-default.yaml``) with
``--concurrency`` requests in flight (``--rate``: at a fixed number a second) and times from the
first create until the last measured pod is bound (seen on a watch). Throughput is measured pods /
those seconds. No kubelet runs (``kubesched apiserver --no-kubelet``), as scheduler_perf has none:
bound pods stay as the scheduler left them; kube-apiserver runs without the TaintNodesByCondition admission plugin, as
upstream's integration harness does, so new nodes are not tainted not-ready. Both schedulers get
scheduler_perf's client limits. The last line printed is JSON: workload, stack, nodes, pods,
seconds, pods_per_second, CPU seconds per process, peak RSS of the scheduler and the API server.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from kubesched import eventloop
from scheduler_perf import node, pod

KUBESCHED = [sys.executable, "-m", "kubesched.cli"]
ROOT = Path(__file__).resolve().parent.parent
STACKS = ("kubesched", "upstream", "mixed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured_cpu(name: str, pid: int) -> float:
    """The scheduler's CPU with its children's; the servers' and the client's their own."""
    return tree_cpu_seconds(pid) if name == "scheduler" else cpu_seconds(pid)


def tree_cpu_seconds(pid: int) -> float:
    """``cpu_seconds`` of a process and of every process it started that is alive (a scheduler
    that writes through helper processes is measured whole)."""
    total = cpu_seconds(pid)
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                total += tree_cpu_seconds(int(child))
    return total


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a live process (its peak resident set)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


class Client:
    """The benchmark's own API client: aiohttp with the kubeconfig's token and CA."""

    def __init__(self, kubeconfig: Path, concurrency: int) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        self.base = cluster["server"]
        ctx: ssl.SSLContext | bool = False  # insecure-skip-tls-verify (the upstream control plane's kubeconfig)
        if "certificate-authority-data" in cluster:
            ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self.headers = {
            "Authorization": f"Bearer {cfg['users'][0]['user']['token']}",
            "Content-Type": "application/json",
        }
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ctx, limit=concurrency), headers=self.headers
        )
        self.concurrency = concurrency

    async def create_all(self, path: str, objs: list[dict[str, Any]], rate: float = 0.0) -> None:
        """POST every object, ``concurrency`` at a time; with ``rate``, the i-th not before i/rate
        seconds from the start (a fixed arrival rate, whatever the scheduler's pace)."""
        it = iter(enumerate(objs))
        start = time.perf_counter()

        async def worker() -> None:
            for i, obj in it:
                if rate > 0:
                    delay = start + i / rate - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                async with self.session.post(self.base + path, data=orjson.dumps(obj)) as resp:
                    if resp.status != 201:
                        raise RuntimeError(f"POST {path}: {resp.status} {await resp.text()}")
                    await resp.read()

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))

    async def watch_bound(self, prefix: str, count: int, ready: asyncio.Event) -> float:
        """Watch pods until ``count`` pods named ``prefix-*`` are bound; the time of the last one.
        A watch the server ends (kube-apiserver closes one whose reader falls behind) is listed
        and watched again from the list's resourceVersion, as an informer does."""
        bound: set[str] = set()
        # only bound pods: the server filters (a selector transition arrives as ADDED)
        pods = f"{self.base}/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%21%3D"
        version = "0"
        while True:
            url = f"{pods}&watch=1&allowWatchBookmarks=true&resourceVersion={version}"
            async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
                ready.set()
                async for line in resp.content:
                    ev = orjson.loads(line)
                    obj = ev["object"]
                    if ev["type"] == "ERROR":  # 410 Gone: too old a version; list again below
                        break
                    version = obj["metadata"]["resourceVersion"]
                    if ev["type"] == "BOOKMARK":
                        continue
                    name = obj["metadata"]["name"]
                    if name.startswith(prefix) and (obj.get("spec") or {}).get("nodeName"):
                        bound.add(name)
                        if len(bound) >= count:
                            return time.perf_counter()
            async with self.session.get(pods) as resp:
                listed = orjson.loads(await resp.read())
            version = listed["metadata"]["resourceVersion"]
            bound |= {p["metadata"]["name"] for p in listed["items"] if p["metadata"]["name"].startswith(prefix)}
            if len(bound) >= count:
                return time.perf_counter()

    async def close(self) -> None:
        await self.session.close()


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def spawn(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT)


def wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear (server exit {proc.returncode})")
        time.sleep(0.05)


async def measure(
    kubeconfig: Path,
    nodes: int,
    init_pods: int,
    pods: int,
    concurrency: int,
    sched_cmd: list[str],
    logs: Path,
    server_pids: dict[str, int],
    rate: float = 0.0,
) -> tuple[dict[str, Any], subprocess.Popen[bytes]]:
    client = Client(kubeconfig, concurrency)
    sched: subprocess.Popen[bytes] | None = None
    try:
        await client.create_all("/api/v1/nodes", [node(i) for i in range(nodes)])
        sched = spawn(sched_cmd, logs / "scheduler.log")
        ready = asyncio.Event()
        init = asyncio.create_task(client.watch_bound("init-", init_pods, ready))
        await ready.wait()
        await client.create_all("/api/v1/namespaces/default/pods", [pod("init", i) for i in range(init_pods)])
        await while_running(init, sched)
        ready = asyncio.Event()
        measured = asyncio.create_task(client.watch_bound("measured-", pods, ready))
        await ready.wait()
        objs = [pod("measured", i) for i in range(pods)]
        watched = {"scheduler": sched.pid, **server_pids, "client": os.getpid()}
        cpu0 = {name: measured_cpu(name, p) for name, p in watched.items()}
        started = time.perf_counter()
        await client.create_all("/api/v1/namespaces/default/pods", objs, rate)
        created = time.perf_counter()
        finished = await while_running(measured, sched)
        cpu = {name: round(measured_cpu(name, watched[name]) - c, 2) for name, c in cpu0.items()}
    except BaseException:  # the scheduler goes with the run (main stops only what measure returned)
        if sched is not None:
            stop(sched)
        raise
    finally:
        await client.close()
    seconds = finished - started
    return {
        "seconds": round(seconds, 3),
        "create_seconds": round(created - started, 3),
        "pods_per_second": round(pods / seconds, 1),
        "cpu_seconds": cpu,
    }, sched


async def while_running(task: asyncio.Task[float], proc: subprocess.Popen[bytes]) -> float:
    """``task``'s result, or an error as soon as ``proc`` (the scheduler) has exited."""
    while True:
        done, _ = await asyncio.wait({task}, timeout=0.5)
        if done:
            return task.result()
        if proc.poll() is not None:
            task.cancel()
            raise RuntimeError(f"the scheduler exited with status {proc.returncode}: see its log")


def write_config(work: Path, kubeconfig: Path | None = None) -> Path:
    """scheduler_perf's client limits (``mustSetupCluster``: QPS and burst 5000) instead of
    kube-scheduler's defaults of 50 and 100, which would cap the run at 50 bindings a second;
    both schedulers run without leader election, as scheduler_perf's scheduler does (the same
    settings on both sides); kube-scheduler also reads its kubeconfig from here."""
    path = work / "scheduler-config.yaml"
    config: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": False},
    }
    if kubeconfig is not None:
        config["clientConnection"]["kubeconfig"] = str(kubeconfig)
    path.write_text(yaml.safe_dump(config))
    return path


def upstream_binaries() -> Path:
    """The folder of kube-apiserver, etcd and kube-scheduler v1.37.2, built now if not yet."""
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_upstream.sh")], capture_output=True, text=True)
    if built.returncode != 0:  # no Go, no module proxy: the script's last words, no traceback
        last = (built.stderr.strip().splitlines() or ["(no output)"])[-1]
        sys.exit(f"scheduler_perf_http: building upstream's binaries failed: {last}")
    return Path(built.stdout.strip().splitlines()[-1])


class Servers:
    """The API server side of one stack: ``kubesched apiserver``, or etcd and kube-apiserver."""

    def __init__(self, stack: str, work: Path) -> None:
        self.stack = stack
        self.work = work
        self.plane: Any = None
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Path:
        """Start the servers; the admin kubeconfig."""
        if self.stack == "kubesched":
            data, port = self.work / "data", free_port()
            # the API server alone, as scheduler_perf runs it: no kubelet and no controller manager
            # (with the node lifecycle controller and no kubelet, every node would go NotReady 50 s
            # in); ``--controllers`` with only a disabled name enables none, as kube-controller-manager's flag
            self.proc = spawn(
                [
                    *KUBESCHED,
                    "apiserver",
                    "--data-dir",
                    str(data),
                    "--port",
                    str(port),
                    "--no-kubelet",
                    "--controllers=-node-lifecycle",
                ],
                self.work / "apiserver.log",
            )
            wait_for(data / "kubeconfig", self.proc)
            return data / "kubeconfig"
        sys.path.insert(0, str(ROOT))
        from tests.upstream import ControlPlane

        self.plane = ControlPlane(
            self.work / "upstream",
            args=("--disable-admission-plugins=TaintNodesByCondition",),
            bin_dir=upstream_binaries(),
        ).start()
        return Path(self.plane.kubeconfig)

    def pids(self) -> dict[str, int]:
        if self.proc is not None:
            return {"apiserver": self.proc.pid}
        etcd, apiserver = self.plane.procs
        return {"apiserver": apiserver.pid, "etcd": etcd.pid}

    def stop(self) -> None:
        if self.plane is not None:
            self.plane.stop()
        if self.proc is not None:
            stop(self.proc)


def scheduler_command(stack: str, work: Path, kubeconfig: Path, write_results: bool, node_limit: int) -> list[str]:
    if stack == "upstream":
        config = write_config(work, kubeconfig)
        return [str(upstream_binaries() / "kube-scheduler"), f"--config={config}", f"--secure-port={free_port()}"]
    return [
        *KUBESCHED,
        "scheduler",
        "--kubeconfig",
        str(kubeconfig),
        "--config",
        str(write_config(work)),
        "--secure-port",
        str(free_port()),  # not 10259: another scheduler may hold it
        *(["--write-results", "--results-node-limit", str(node_limit)] if write_results else []),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", choices=STACKS, default="kubesched", help="which API server and scheduler")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--init-pods", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32, help="client requests in flight")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="measured pods created per second (default: as fast as the client can); below both schedulers' "
        "throughput, both see the same arrivals, so their CPU per pod compares the work alone",
    )
    parser.add_argument("--keep", action="store_true", help="keep the data directory and logs")
    parser.add_argument(
        "--write-results",
        action="store_true",
        help="the scheduler writes each pod's per-plugin results on it (kubesched scheduler --write-results)",
    )
    parser.add_argument("--results-node-limit", type=int, default=10, help="with --write-results")
    args = parser.parse_args()
    if args.write_results and args.stack == "upstream":
        parser.error("--write-results is kubesched scheduler's; kube-scheduler writes no results")
    work = Path(tempfile.mkdtemp(prefix="kubesched-bench-"))
    servers = Servers(args.stack, work)
    sched: subprocess.Popen[bytes] | None = None
    try:
        kubeconfig = servers.start()
        command = scheduler_command(args.stack, work, kubeconfig, args.write_results, args.results_node_limit)
        result, sched = eventloop.run(
            measure(
                kubeconfig,
                args.nodes,
                args.init_pods,
                args.pods,
                args.concurrency,
                command,
                work,
                servers.pids(),
                args.rate,
            )
        )
        rss = {
            "scheduler_peak_rss_mib": peak_rss_mib(sched.pid),
            "apiserver_peak_rss_mib": peak_rss_mib(servers.pids()["apiserver"]),
        }
    finally:
        if sched is not None:
            stop(sched)
        servers.stop()
        if not args.keep:
            subprocess.run(["rm", "-rf", str(work)], check=False)
        else:
            print(f"kept {work}", file=sys.stderr)
    workload = "SchedulingBasic/http" + ("+results" if args.write_results else "")
    print(
        json.dumps(
            {
                "workload": workload,
                "stack": args.stack,
                "nodes": args.nodes,
                "pods": args.pods,
                **({"rate": args.rate} if args.rate > 0 else {}),
                **result,
                **rss,
            }
        )
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
