"""``kubesched explain POD``: why a pod of a live cluster went where it did, or why it waits.

The pod's own scheduling results (kube-scheduler-simulator's annotations, which ``kubesched up``
and ``kubesched scheduler --write-results`` write) are printed as ``simulate --explain`` prints
them. A pod without them, or with ``--dry-run``, is scheduled once more in a dry cycle: the
cluster's objects are listed into an in-memory store, the pod is made pending again (its own
placement taken out), the pending pods nominated to a node are given to the queue's nominator,
and one scheduling cycle runs over that snapshot; nothing is written to the cluster."""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from kubesched import eventloop
from kubesched.apiserver.resources import BY_KIND
from kubesched.app.kubeconfig import check_kubeconfig
from kubesched.app.scheduler import INFORMER_KINDS
from kubesched.errors import InputError
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.resultstore import HISTORY, parse


async def _get(api: k8s.ApiClient, path: str) -> Any:
    resp = await api.call_api(path, "GET", auth_settings=["BearerToken"], _preload_content=False)
    return json.loads(await resp.read())


def _list_path(kind: str) -> str:
    r = BY_KIND[kind]
    root = f"/api/{r.version}" if not r.group else f"/apis/{r.group}/{r.version}"
    return f"{root}/{r.plural}"


async def _fetch(kubeconfig: str, namespace: str, name: str, snapshot: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    api = await k8s_config.new_client_from_config(config_file=kubeconfig)
    async with api:
        core = k8s.CoreV1Api(api)
        try:
            resp = await core.read_namespaced_pod(name, namespace, _preload_content=False)
        except k8s.ApiException as exc:
            if exc.status == 404:
                raise InputError(f'pods "{name}" not found in namespace "{namespace}"') from None
            raise InputError(f'pod "{namespace}/{name}": {exc.reason or exc.status}', file=kubeconfig) from None
        pod = json.loads(await resp.read())
        if resp.status == 404:
            raise InputError(f'pods "{name}" not found in namespace "{namespace}"')
        if resp.status >= 400 or pod.get("kind") == "Status":
            raise InputError(f'pod "{namespace}/{name}": {pod.get("message") or resp.status}', file=kubeconfig)
        objects: dict[str, Any] = {}
        if snapshot:
            for kind in INFORMER_KINDS:
                if kind not in BY_KIND:
                    continue
                try:
                    objects[kind] = (await _get(api, _list_path(kind))).get("items") or []
                except k8s.ApiException:
                    objects[kind] = []  # a kind the server does not serve: none of them
        return pod, objects


def fetch(kubeconfig: str, namespace: str, name: str, snapshot: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    check_kubeconfig(kubeconfig)
    try:
        return eventloop.run(_fetch(kubeconfig, namespace, name, snapshot))
    except InputError:
        raise
    except Exception as exc:  # an unreachable server
        raise InputError(f"cannot reach the API server: {exc}", file=kubeconfig) from None


def from_annotations(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """Each attempt written on the pod, oldest first (``result-history``, else the latest)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    latest = parse(annotations)
    if latest is None:
        return []
    try:
        history = [parse(h) or {} for h in json.loads(annotations.get(HISTORY) or "[]")]
    except (ValueError, AttributeError, TypeError):
        history = []
    return history or [latest]


def dry_run(pod: dict[str, Any], objects: dict[str, Any], config: SchedulerConfig) -> dict[str, Any]:
    """One scheduling cycle of ``pod`` against the snapshot, the pod pending again. An
    InputError says why when the attempt never ran: no profile schedules the pod (another
    scheduler's), or it is held before the queue (scheduling gates, a PreEnqueue plugin)."""
    from kubesched.api.errors import ApiError
    from kubesched.api.pod import pod_info_from
    from kubesched.embedded.cluster import EmbeddedCluster
    from kubesched.simulate.output import explain_dict

    spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
    key = f"{pod['metadata'].get('namespace', 'default')}/{pod['metadata']['name']}"
    # the snapshot as a cluster's state; its loops are not run (one cycle of one pod is wanted)
    cluster = EmbeddedCluster(config=config, explain={key}, start=False, loops=False)
    uid = pod["metadata"].get("uid")
    nominated: list[tuple[dict[str, Any], str]] = []
    for kind, items in objects.items():
        for obj in items:
            obj = {**obj, "kind": kind, "apiVersion": BY_KIND[kind].group_version}
            if kind == "Pod":
                if obj["metadata"].get("uid") == uid:
                    continue
                if not (obj.get("spec") or {}).get("nodeName"):
                    node = (obj.get("status") or {}).get("nominatedNodeName")
                    if node:  # the nominator holds it on that node (for pods of no higher priority)
                        nominated.append((obj, node))
                    continue  # other pending pods take no room
            try:
                cluster.create(obj)
            except (ApiError, InputError):
                continue
    cluster.create({**pod, "spec": spec, "status": {"phase": "Pending"}})
    sched = cluster.sched
    cluster.start()
    sched.process_events()
    for obj, node in nominated:  # as the queue's nominator has them, not to be scheduled here
        sched.nominate(pod_info_from(obj), node)
    sched.drain()
    history = sched.explanations.get(key)
    if not history:
        raise InputError(f"pod {key}: the dry cycle did not reach a scheduling attempt: {_why_not_tried(pod, sched)}")
    out = explain_dict(history[-1])
    out["selected-node"] = out.pop("selectedNode", None) or ""
    return out


def _why_not_tried(pod: dict[str, Any], sched: Any) -> str:
    """Why the scheduler never tried ``pod``: another scheduler's, or held before the queue."""
    scheduler_name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
    if scheduler_name not in sched.profiles:
        profiles = ", ".join(sorted(sched.profiles))
        return f'it is for scheduler "{scheduler_name}", and no profile of the configuration is ({profiles})'
    gates = [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or () if isinstance(g, dict)]
    if gates:
        return f"it is held by its scheduling gates ({', '.join(str(g) for g in gates)})"
    uid = (pod.get("metadata") or {}).get("uid")
    for qp in sched.gated_pods():
        if qp.uid == uid:
            status = getattr(qp, "gated_status", None)
            reason = f": {status.message()}" if status is not None and status.message() else ""
            return f"PreEnqueue plugin {getattr(qp, 'gating_plugin', '') or '?'} holds it{reason}"
    return "it never left the queue"
