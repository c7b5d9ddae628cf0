"""``kubesched node add|stop|start``: add hollow nodes to a running ``kubesched up`` (KWOK's way:
a Node object, which the hollow kubelet runs), or stop and restart a node's kubelet (KWOK's way of
failing a node), through the API server like any client: the node's
``kubesched.io/kubelet-stopped`` annotation, which the hollow kubelet obeys."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Coroutine
from typing import Any

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from kubesched import eventloop
from kubesched.app.kubeconfig import check_kubeconfig
from kubesched.errors import InputError
from kubesched.kubelet.node import STOPPED_ANNOTATION, fake_node


async def _set(kubeconfig: str, names: list[str], stop: bool) -> list[str]:
    api_client = await k8s_config.new_client_from_config(config_file=kubeconfig)
    lines = []
    async with api_client as api:
        core = k8s.CoreV1Api(api)
        for name in names:
            body = {"metadata": {"annotations": {STOPPED_ANNOTATION: "true" if stop else None}}}
            try:
                await core.patch_node(name, body, _content_type="application/merge-patch+json")
            except k8s.ApiException as exc:
                raise InputError(f'node "{name}": {exc.reason or exc.status}', file=kubeconfig) from None
            lines.append(f"node/{name} {'stopped' if stop else 'started'}")
    return lines


def set_stopped(kubeconfig: str, names: list[str], stop: bool) -> list[str]:
    """Stop (or start) the hollow kubelets of NAMES; one line per node."""
    return _run(kubeconfig, lambda: _set(kubeconfig, names, stop))


def load_template(path: str) -> dict[str, Any]:
    """The one Node of a manifest file, validated as a create would be."""
    from kubesched.cluster.loader import load_paths
    from kubesched.loading.manifests import validate_manifest

    nodes = [m for m in load_paths([path]).manifests if m.kind == "Node"]
    if len(nodes) != 1:
        raise InputError(f"a template holds exactly one Node, found {len(nodes)}", file=path)
    validate_manifest(nodes[0])
    return nodes[0].obj


def _named(template: dict[str, Any], name: str) -> dict[str, Any]:
    """A copy of the template named NAME (its hostname label too); without a status of its own,
    the default node's capacity."""
    node = copy.deepcopy(template)
    meta = {
        k: v for k, v in (node.get("metadata") or {}).items() if k not in ("resourceVersion", "uid", "managedFields")
    }
    meta.pop("creationTimestamp", None)
    meta["name"] = name
    meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/hostname": name}
    status = node.get("status") or fake_node(name)["status"]
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": node.get("spec") or {}, "status": status}


async def _add(kubeconfig: str, names: list[str], count: int, template: dict[str, Any] | None) -> list[str]:
    api_client = await k8s_config.new_client_from_config(config_file=kubeconfig)
    lines = []
    async with api_client as api:
        core = k8s.CoreV1Api(api)
        existing = await core.list_node(_preload_content=False)
        taken = {n["metadata"]["name"] for n in (await existing.json())["items"]}
        if not names:
            numbers = [int(m.group(1)) for n in taken if (m := re.fullmatch(r"node-(\d+)", n))]
            start = max(numbers, default=-1) + 1
            names = [f"node-{i}" for i in range(start, start + count)]
        for name in names:
            body = _named(template, name) if template is not None else fake_node(name)
            try:
                resp = await core.create_node(body, _preload_content=False)
            except k8s.ApiException as exc:
                raise InputError(f'node "{name}": {exc.reason or exc.status}', file=kubeconfig) from None
            if resp.status >= 400:  # the API server's Status names what is wrong
                status = await resp.json()
                raise InputError(str(status.get("message") or resp.status), file=kubeconfig)
            lines.append(f"node/{name} created")
    return lines


def add_nodes(kubeconfig: str, names: list[str], count: int, template: dict[str, Any] | None) -> list[str]:
    """Create NAMES (or ``count`` nodes named after the highest ``node-N``) from ``template``."""
    return _run(kubeconfig, lambda: _add(kubeconfig, names, count, template))


def _run(kubeconfig: str, work: Callable[[], Coroutine[Any, Any, list[str]]]) -> list[str]:
    """Run requests against the API server of ``kubeconfig``; an unreachable one is an InputError."""
    check_kubeconfig(kubeconfig)
    try:
        return eventloop.run(work())
    except InputError:
        raise
    except Exception as exc:  # an unreachable server
        raise InputError(f"cannot reach the API server: {exc}", file=kubeconfig) from None
