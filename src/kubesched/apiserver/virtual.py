"""Resources computed on request rather than stored: metrics-server's ``metrics.k8s.io/v1beta1``
NodeMetrics and PodMetrics (``kubectl top``), here the hollow nodes' usage as the requests of
the pods running on them, and ``authentication.k8s.io/v1`` SelfSubjectReview (``kubectl auth
whoami``) for the token's user."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesched.api.errors import MethodNotAllowed, NotFound
from kubesched.api.quantity import milli_value, value
from kubesched.apiserver.bodies import read_object
from kubesched.apiserver.context import ServerContext
from kubesched.apiserver.request import Target, respond
from kubesched.apiserver.selectors import labels_match
from kubesched.clock import rfc3339

# who the bearer token of the kubeconfig ``kubesched up`` writes authenticates as
ADMIN_USER = {"username": "kubesched-admin", "groups": ["system:masters", "system:authenticated"]}
WINDOW = "10s"  # metrics-server's resolution, as NodeMetrics reports it


def _usage(containers: list[dict[str, Any]]) -> tuple[int, int]:
    """(millicores, bytes) the containers request."""
    cpu = mem = 0
    for c in containers:
        req = ((c or {}).get("resources") or {}).get("requests") or {}
        if "cpu" in req:
            cpu += milli_value(req["cpu"])
        if "memory" in req:
            mem += value(req["memory"])
    return cpu, mem


def _quantities(cpu_milli: int, mem_bytes: int) -> dict[str, str]:
    """metrics-server's formats: CPU in nanocores, memory in Ki."""
    return {"cpu": f"{cpu_milli * 1_000_000}n", "memory": f"{mem_bytes // 1024}Ki"}


def _running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and bool((pod.get("spec") or {}).get("nodeName"))


class Virtual(ServerContext):
    """The ApiServer's handlers of virtual resources; a part of ``ApiServer``."""

    async def _virtual(self, request: web.Request, t: Target) -> web.Response:
        if t.resource.kind == "SelfSubjectReview":
            if request.method != "POST" or t.name is not None:
                raise MethodNotAllowed("the server does not allow this method on the requested resource")
            body = await read_object(request)
            self._check_kind(t, body)
            return respond(
                {
                    "kind": "SelfSubjectReview",
                    "apiVersion": "authentication.k8s.io/v1",
                    "metadata": {"creationTimestamp": None},
                    "status": {"userInfo": ADMIN_USER},
                },
                201,
            )
        if request.method not in ("GET", "HEAD"):
            raise MethodNotAllowed("the server does not allow this method on the requested resource")
        now = rfc3339(self.store.clock.now())
        labels, _ = self._selectors(request, t)
        if t.resource.kind == "NodeMetrics":
            items = self._node_metrics(now)
        else:
            items = self._pod_metrics(now, self._ns(t) if t.namespace is not None else None)
        if t.name is not None:
            found = next((i for i in items if i["metadata"]["name"] == t.name), None)
            if found is None:
                raise NotFound(
                    f'{t.resource.qualified} "{t.name}" not found',
                    details={"name": t.name, "group": t.resource.group, "kind": t.resource.plural},
                )
            return respond(found)
        items = [i for i in items if labels_match(labels, i)]
        return respond(
            {
                "kind": f"{t.resource.kind}List",
                "apiVersion": t.resource.group_version,
                "metadata": {},
                "items": items,
            }
        )

    def _node_metrics(self, now: str) -> list[dict[str, Any]]:
        per_node: dict[str, tuple[int, int]] = {}
        for pod in self.store.list("Pod")[0]:
            if _running(pod):
                cpu, mem = _usage((pod.get("spec") or {}).get("containers") or [])
                node = pod["spec"]["nodeName"]
                have = per_node.get(node, (0, 0))
                per_node[node] = (have[0] + cpu, have[1] + mem)
        out = []
        for node in self.store.list("Node")[0]:
            meta = node["metadata"]
            cpu, mem = per_node.get(meta["name"], (0, 0))
            out.append(
                {
                    "metadata": {
                        "name": meta["name"],
                        "creationTimestamp": now,
                        "labels": dict(meta.get("labels") or {}),
                    },
                    "timestamp": now,
                    "window": WINDOW,
                    "usage": _quantities(cpu, mem),
                }
            )
        return out

    def _pod_metrics(self, now: str, namespace: str | None) -> list[dict[str, Any]]:
        out = []
        for pod in self.store.list("Pod", namespace)[0]:
            if not _running(pod):
                continue
            meta = pod["metadata"]
            containers = [
                {"name": c.get("name", ""), "usage": _quantities(*_usage([c]))}
                for c in (pod.get("spec") or {}).get("containers") or []
            ]
            out.append(
                {
                    "metadata": {
                        "name": meta["name"],
                        "namespace": meta.get("namespace", "default"),
                        "creationTimestamp": now,
                        "labels": dict(meta.get("labels") or {}),
                    },
                    "timestamp": now,
                    "window": WINDOW,
                    "containers": containers,
                }
            )
        return out
