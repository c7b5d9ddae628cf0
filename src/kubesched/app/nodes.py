"""``kubesched node stop|start``: stop or restart the hollow kubelet of nodes of a running
``kubesched up`` (KWOK's way of failing a node), through the API server like any client: the
node's ``kubesched.io/kubelet-stopped`` annotation, which the hollow kubelet obeys."""

from __future__ import annotations

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from kubesched import eventloop
from kubesched.apiserver.kubelet import STOPPED_ANNOTATION
from kubesched.app.scheduler import _check_kubeconfig
from kubesched.errors import InputError


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
    _check_kubeconfig(kubeconfig)
    try:
        return eventloop.run(_set(kubeconfig, names, stop))
    except InputError:
        raise
    except Exception as exc:  # an unreachable server
        raise InputError(f"cannot reach the API server: {exc}", file=kubeconfig) from None
