"""Load on the embedded API server: many concurrent clients and slow watchers for a while, with
the server's memory sampled throughout (``kubesched apiserver`` as its own process, over HTTPS).

    python benchmarks/apiserver_load.py --clients 200 --slow-watchers 20 --seconds 60

The server keeps ``--watch-history`` events for watches to replay; memory grows until that many
are kept (a few seconds at 20,000), and the warm-up is longer than that. Each client loops
create, get, update, list (one page of 50) and delete of its own ConfigMaps (1 KiB of data each).
Each slow watcher watches ConfigMaps and reads 4 KiB a second, far slower
than the events come, so the server must close it once it falls ``--watch-queue-length``
events behind (it then watches again, as a reflector does). Printed: requests per second by
outcome (2xx, 429, other), watches the server closed, and the server's RSS after the warm-up,
at its peak and at the end; the last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp
import yaml

from kubesched import eventloop

KUBESCHED = [sys.executable, "-m", "kubesched.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def client(session: aiohttp.ClientSession, base: str, i: int, stop: float, outcomes: Counter[str]) -> None:
    path = f"{base}/api/v1/namespaces/default/configmaps"
    n = 0
    while time.monotonic() < stop:
        name = f"c{i}-{n}"
        n += 1
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v" * 1024}}
        steps = [
            ("POST", path, body),
            ("GET", f"{path}/{name}", None),
            ("PUT", f"{path}/{name}", {**body, "data": {"k": "w" * 1024}}),
            ("GET", f"{path}?limit=50", None),
            ("DELETE", f"{path}/{name}", None),
        ]
        for method, url, payload in steps:
            try:
                async with session.request(method, url, json=payload) as resp:
                    await resp.read()
                    outcomes["2xx" if resp.status < 300 else "429" if resp.status == 429 else str(resp.status)] += 1
                    if resp.status == 429:
                        await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))
            except (aiohttp.ClientError, TimeoutError) as exc:
                outcomes[type(exc).__name__] += 1


async def slow_watcher(session: aiohttp.ClientSession, base: str, stop: float, closed: Counter[str]) -> None:
    url = f"{base}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0"
    while time.monotonic() < stop:
        try:
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
                while time.monotonic() < stop:
                    chunk = await resp.content.read(4096)
                    if not chunk:
                        closed["ended"] += 1
                        break
                    await asyncio.sleep(1.0)
        except (aiohttp.ClientError, TimeoutError):
            closed["cut"] += 1


async def main_async(args: argparse.Namespace) -> dict[str, object]:
    data = Path(tempfile.mkdtemp(prefix="kubesched-load-"))
    port = free_port()
    proc = subprocess.Popen(
        [
            *KUBESCHED,
            "apiserver",
            "--data-dir",
            str(data),
            "--port",
            str(port),
            "--no-kubelet",
            f"--watch-history={args.watch_history}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(data / "server.log", "wb"),  # noqa: SIM115 - the server's, closed with it
    )
    try:
        kubeconfig = data / "kubeconfig"
        for _ in range(300):
            if kubeconfig.exists():
                break
            await asyncio.sleep(0.1)
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        headers = {"Authorization": f"Bearer {cfg['users'][0]['user']['token']}"}
        connector = aiohttp.TCPConnector(limit=args.clients + args.slow_watchers + 10, ssl=ctx)
        async with aiohttp.ClientSession(base_url=None, headers=headers, connector=connector) as session:
            base = cluster["server"]
            for _ in range(100):
                try:
                    async with session.get(f"{base}/healthz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            started = time.monotonic()
            stop = started + args.seconds
            outcomes: Counter[str] = Counter()
            closed: Counter[str] = Counter()
            samples: list[tuple[float, float]] = []

            async def sample() -> None:
                while time.monotonic() < stop:
                    samples.append((time.monotonic() - started, rss_mib(proc.pid)))
                    await asyncio.sleep(1.0)

            tasks = [asyncio.create_task(sample())]
            tasks += [asyncio.create_task(slow_watcher(session, base, stop, closed)) for _ in range(args.slow_watchers)]
            tasks += [asyncio.create_task(client(session, base, i, stop, outcomes)) for i in range(args.clients)]
            await asyncio.wait(tasks, timeout=args.seconds + 30)
            for t in tasks:
                t.cancel()
            elapsed = time.monotonic() - started
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        print(f"server log: {data / 'server.log'}", file=sys.stderr)
    warm = [rss for t, rss in samples if t >= args.warmup] or [s[1] for s in samples]
    total = sum(outcomes.values())
    return {
        "clients": args.clients,
        "slow_watchers": args.slow_watchers,
        "seconds": round(elapsed, 1),
        "requests_per_second": round(total / elapsed, 1),
        "outcomes": dict(outcomes),
        "watches_closed_by_server": (data / "server.log").read_text().count("closing a watch"),
        "rss_mib_after_warmup": round(warm[0], 1),
        "rss_mib_peak": round(max(warm), 1),
        "rss_mib_end": round(warm[-1], 1),
        "machine": f"{os.cpu_count()} cores, {sys.platform}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--slow-watchers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds before the memory baseline")
    parser.add_argument(
        "--watch-history",
        type=int,
        default=20_000,
        help="the server's --watch-history: memory grows until this many events are kept, then stays flat",
    )
    args = parser.parse_args()
    result = eventloop.run(main_async(args))
    print(
        f"{result['requests_per_second']:,} requests/s over {result['seconds']} s from {args.clients} clients, "
        f"outcomes {result['outcomes']}; {result['watches_closed_by_server']} slow watches closed by the server; "
        f"RSS {result['rss_mib_after_warmup']} MiB after warm-up, {result['rss_mib_peak']} peak, "
        f"{result['rss_mib_end']} at the end"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
