"""How long can one request hold the API server's event loop? Hostile requests of each kind a
tenant can send, drawn at random sizes, against ``kubesched apiserver`` as its own process over
HTTPS, while a canary client asks ``GET /version`` every 2 ms: a request that holds the loop for
T shows as a canary answer T late. Printed per kind: the worst canary delay while one such request
was in flight (the loop hold) and the worst request time; the last line is JSON.

    python benchmarks/loop_hold.py --rounds 20 --seed 1

The kinds: a CRD pattern that backtracks exponentially in a backtracking matcher; CEL rules near
the per-call limit and past it; CRDs whose rule is near cel-go's 100,000 code points; quantities
of huge exponents and digits; JSON nested to the limit and a YAML alias bomb; a Service with every
node port; a list of every ConfigMap of a namespace of 5,000 (1 KiB each; ``--configmaps``); a JSON
patch of 10,000 operations; a selector of 100 requirements.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from apiserver_process import apiserver
from kubesched import eventloop

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NS = "/api/v1/namespaces/default"
GROUP = "/apis/loop.example.com/v1/namespaces/default"


def crd(plural: str, root: dict[str, Any]) -> dict[str, Any]:
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": root}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.loop.example.com"},
        "spec": {
            "group": "loop.example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": plural[:-1].capitalize()},
            "versions": [version],
        },
    }


PATTERNS = crd(
    "patterns",
    {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"s": {"type": "string", "pattern": "^([a-z0-9]+-?)+$"}}}
        },
    },
)
PAIRS = crd(
    "pairs",
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "items": {"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 8}}
                },
                "x-kubernetes-validations": [{"rule": "self.items.all(x, self.items.exists_one(y, y == x))"}],
            }
        },
    },
)


class Bench:
    def __init__(self, session: aiohttp.ClientSession, base: str, rng: random.Random) -> None:
        self.session = session
        self.base = base
        self.rng = rng
        self.n = 0

    async def send(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> int:
        data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
        async with self.session.request(method, self.base + path, data=data, headers={"Content-Type": ctype}) as resp:
            await resp.read()
            return resp.status

    def name(self) -> str:
        self.n += 1
        return f"x{self.n}"

    # -- the hostile requests, each drawn at a random size --------------------------------------
    async def pattern(self) -> int:
        text = "a" * self.rng.randint(20, 20000) + "!"
        obj = {"apiVersion": "loop.example.com/v1", "kind": "Pattern", "metadata": {"name": self.name()}}
        return await self.send("POST", f"{GROUP}/patterns", {**obj, "spec": {"s": text}})

    async def cel(self) -> int:
        n = self.rng.choice([300, 450, 550, 1000])
        obj = {"apiVersion": "loop.example.com/v1", "kind": "Pair", "metadata": {"name": self.name()}}
        return await self.send(
            "POST", f"{GROUP}/pairs?dryRun=All", {**obj, "spec": {"items": [f"s{i:06d}" for i in range(n)]}}
        )

    async def long_rule(self) -> int:
        """A CRD whose rule is near cel-go's 100,000 code points: a chain of up to 4,000 ``&&``
        (accepted), 20,000 additions (too deep) or 4,000 list entries; a new literal each time, so
        no cache has it."""
        tag = self.name()
        shape = self.rng.choice(["and", "plus", "list"])
        n = self.rng.randint(1000, 4000)
        if shape == "and":
            rule = " && ".join(f"self.s != '{tag}{i}'" for i in range(n))
        elif shape == "plus":
            rule = " + ".join(["1"] * 20_000) + f" > {n}"
        else:
            rule = "self.s in [" + ", ".join(f"'{tag}{i}'" for i in range(n)) + "]"
        root = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 8}}}
        root["x-kubernetes-validations"] = [{"rule": rule}]
        return await self.send("POST", f"{CRDS}?dryRun=All", crd(f"rules{tag}s", root))

    async def quantity(self) -> int:
        value = self.rng.choice(
            ["1e9999999", "1e-9999999", "9" * self.rng.randint(1000, 100_000), "1." + "0" * 200_000 + "1"]
        )
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": self.name()}}
        pod["spec"] = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"memory": value}}}]}
        return await self.send("POST", f"{NS}/pods?dryRun=All", pod)

    async def nesting(self) -> int:
        if self.rng.random() < 0.5:
            depth = self.rng.randint(90, 600)
            body = (
                '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"},"x":' + "[" * depth + "]" * depth + "}"
            ).encode()
            return await self.send("POST", f"{NS}/configmaps?dryRun=All", body)
        lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
        for i in range(8):  # each level ten times the one before: 10^9 nodes expanded
            prev, cur = chr(97 + i), chr(98 + i)
            lines.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 10) + "]")
        bomb = "\n".join(lines) + "\n"
        return await self.send("POST", f"{NS}/configmaps?dryRun=All", bomb.encode(), "application/yaml")

    async def service_ports(self) -> int:
        ports = [{"port": 1000 + i, "name": f"p{i}"} for i in range(self.rng.randint(100, 2700))]
        svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": self.name()}}
        svc["spec"] = {"type": "NodePort", "ports": ports}
        return await self.send("POST", f"{NS}/services?dryRun=All", svc)

    async def big_list(self) -> int:
        return await self.send("GET", f"{NS}/configmaps")

    async def json_patch(self) -> int:
        ops = [{"op": "add", "path": f"/data/k{i}", "value": "v"} for i in range(self.rng.randint(1000, 10_000))]
        return await self.send("PATCH", f"{NS}/configmaps/c0?dryRun=All", ops, "application/json-patch+json")

    async def selector(self) -> int:
        terms = ",".join(f"k{i} notin (a,b,c)" for i in range(self.rng.randint(10, 100)))
        return await self.send("GET", f"{NS}/configmaps?labelSelector={terms}")


async def measure(
    bench: Bench, kinds: dict[str, Callable[[], Awaitable[int]]], rounds: int
) -> dict[str, dict[str, float]]:
    """Each kind ``rounds`` times, one at a time, with the canary running throughout."""
    results: dict[str, dict[str, float]] = {}
    window: list[float] = []
    stop = asyncio.Event()

    async def canary() -> None:
        url = bench.base + "/version"
        while not stop.is_set():
            t = time.perf_counter()
            async with bench.session.get(url) as resp:
                await resp.read()
            window.append(time.perf_counter() - t)
            await asyncio.sleep(0.002)

    task = asyncio.create_task(canary())
    await asyncio.sleep(0.5)
    for kind, call in kinds.items():
        worst_hold = worst_request = 0.0
        codes: dict[str, int] = {}
        for _ in range(rounds):
            window.clear()
            t = time.perf_counter()
            code = await call()
            worst_request = max(worst_request, time.perf_counter() - t)
            await asyncio.sleep(0.01)  # the canary answers held back by the request come in
            worst_hold = max(worst_hold, max(window, default=0.0))
            codes[str(code)] = codes.get(str(code), 0) + 1
        results[kind] = {"hold_ms": round(worst_hold * 1000, 1), "request_ms": round(worst_request * 1000, 1), **codes}
        hold, took = worst_hold * 1000, worst_request * 1000
        print(f"{kind:14} loop held at most {hold:8.1f} ms   request at most {took:8.1f} ms   {codes}")
    stop.set()
    await task
    return results


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    async with apiserver("--no-kubelet") as server:
        connector = aiohttp.TCPConnector(ssl=server.ssl)
        async with aiohttp.ClientSession(headers=server.admin, connector=connector) as session:
            bench = Bench(session, server.base, random.Random(args.seed))
            for body in (PATTERNS, PAIRS):
                assert await bench.send("POST", CRDS, body) == 201
            for i in range(args.configmaps):  # the namespace a list reads whole
                cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"k": "v" * 1024}}
                await bench.send("POST", f"{NS}/configmaps", cm)
            await asyncio.sleep(1.0)
            kinds: dict[str, Callable[[], Awaitable[int]]] = {
                "pattern": bench.pattern,
                "cel": bench.cel,
                "long-rule": bench.long_rule,
                "quantity": bench.quantity,
                "nesting": bench.nesting,
                "service-ports": bench.service_ports,
                f"list-{args.configmaps}": bench.big_list,
                "json-patch": bench.json_patch,
                "selector": bench.selector,
            }
            if args.kinds:
                kinds = {k: v for k, v in kinds.items() if k.split("-")[0] in args.kinds.split(",")}
            results = await measure(bench, kinds, args.rounds)
    worst = max(results.items(), key=lambda kv: kv[1]["hold_ms"])
    print(f"worst loop hold: {worst[1]['hold_ms']} ms ({worst[0]})")
    return {"results": results, "worst": {"kind": worst[0], "hold_ms": worst[1]["hold_ms"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="requests of each kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default="", help="only these kinds (comma-separated, e.g. long,json)")
    parser.add_argument("--configmaps", type=int, default=5000, help="ConfigMaps in the namespace the list reads")
    args = parser.parse_args()
    print(json.dumps(eventloop.run(main_async(args))))


if __name__ == "__main__":
    main()
