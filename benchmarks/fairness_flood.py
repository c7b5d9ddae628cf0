"""One tenant floods the API server; how long does another tenant wait? ``kubesched apiserver`` as
its own process over HTTPS, two users of a static token file (neither in system:masters, both
bound to cluster-admin): tenant A runs ``--flood`` concurrent loops of list-the-ConfigMaps and
create-ConfigMap requests, tenant B sends one GET at a time; B's latency (p50, p99, max) and A's
answers by code are printed with API Priority and Fairness on and off, the last line JSON. B is
each of ``--quiet-users`` in turn with fairness on (``tenant-b``: another tenant, in A's priority
level ``global-default``; ``system:kube-scheduler``: the scheduler's user, whose FlowSchema sends
it to ``workload-high``), and the first of them with fairness off.

    python benchmarks/fairness_flood.py --flood 200 --seconds 20
    python benchmarks/fairness_flood.py --quiet-users tenant-b system:kube-scheduler
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections import Counter
from typing import Any

import aiohttp

from apiserver_process import apiserver
from kubesched import eventloop

NS = "/api/v1/namespaces/default"
TOKENS = 'flood-token,tenant-a,2001,"tenants"\nquiet-token,{quiet},2002,"tenants"\n'


async def run_once(args: argparse.Namespace, fair: bool, quiet_user: str) -> dict[str, Any]:
    flags = (
        "--no-kubelet",
        "--token-auth-file",
        "{dir}/tokens.csv",
        f"--enable-priority-and-fairness={str(fair).lower()}",
    )
    async with apiserver(*flags, files={"tokens.csv": TOKENS.format(quiet=quiet_user)}) as server:
        base, admin = server.base, server.admin
        connector = aiohttp.TCPConnector(limit=args.flood + 20, ssl=server.ssl)
        async with aiohttp.ClientSession(connector=connector) as session:
            binding = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "tenants"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "tenants"}],
            }
            async with session.post(
                base + "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json=binding, headers=admin
            ) as resp:
                assert resp.status == 201, await resp.text()
            for i in range(args.configmaps):
                cm = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"seed{i}"},
                    "data": {"k": "v" * 512},
                }
                async with session.post(base + f"{NS}/configmaps", json=cm, headers=admin) as resp:
                    await resp.read()
            flood_codes: Counter[str] = Counter()
            stop = time.monotonic() + args.seconds
            a = {"Authorization": "Bearer flood-token"}
            b = {"Authorization": "Bearer quiet-token"}

            async def flood(i: int) -> None:
                n = 0
                while time.monotonic() < stop:
                    n += 1
                    try:
                        if n % 2:
                            async with session.get(base + f"{NS}/configmaps", headers=a) as resp:
                                await resp.read()
                        else:
                            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"f{i}-{n}"}}
                            async with session.post(base + f"{NS}/configmaps?dryRun=All", json=cm, headers=a) as resp:
                                await resp.read()
                        flood_codes[str(resp.status)] += 1
                        if resp.status == 429:
                            await asyncio.sleep(float(resp.headers.get("Retry-After", "1")))
                    except (aiohttp.ClientError, TimeoutError) as exc:
                        flood_codes[type(exc).__name__] += 1

            latencies: list[float] = []
            quiet_codes: Counter[str] = Counter()

            async def quiet() -> None:
                await asyncio.sleep(1.0)  # the flood is on
                while time.monotonic() < stop:
                    t = time.perf_counter()
                    async with session.get(base + f"{NS}/configmaps/seed1", headers=b) as resp:
                        await resp.read()
                    latencies.append(time.perf_counter() - t)
                    quiet_codes[str(resp.status)] += 1
                    await asyncio.sleep(0.05)

            await asyncio.gather(quiet(), *(flood(i) for i in range(args.flood)))
    latencies.sort()
    ms = [x * 1000 for x in latencies]
    out = {
        "fairness": fair,
        "quiet_user": quiet_user,
        "quiet_requests": len(ms),
        "quiet_p50_ms": round(statistics.median(ms), 1),
        "quiet_p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 1),
        "quiet_max_ms": round(ms[-1], 1),
        "quiet_codes": dict(quiet_codes),
        "flood_codes": dict(flood_codes),
    }
    print(
        f"fairness {'on ' if fair else 'off'}: B ({quiet_user}) p50 {out['quiet_p50_ms']} ms, "
        f"p99 {out['quiet_p99_ms']} ms, "
        f"max {out['quiet_max_ms']} ms over {len(ms)} requests {dict(quiet_codes)}; tenant A {dict(flood_codes)}"
    )
    return out


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    runs = [await run_once(args, True, user) for user in args.quiet_users]
    return [*runs, await run_once(args, False, args.quiet_users[0])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=200, help="tenant A's concurrent loops")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--configmaps", type=int, default=200, help="ConfigMaps tenant A lists whole")
    parser.add_argument(
        "--quiet-users", nargs="+", default=["tenant-b"], help="who B is, one run each with fairness on"
    )
    args = parser.parse_args()
    print(json.dumps(eventloop.run(main_async(args))))


if __name__ == "__main__":
    main()
