"""A hollow kubelet for every node, as KWOK provides one: nodes report Ready with a complete
``status.nodeInfo`` and renew their Lease in ``kube-node-lease``; a pod bound to a node starts
Running at once (Ready, a pod IP, running container statuses). A hollow kubelet has no
containers to stop, so it confirms a graceful deletion promptly, as KWOK's pod-delete stage does:
``termination_delay`` seconds after the deletionTimestamp appears it deletes the pod with grace
period 0 and its UID as precondition (what the kubelet's status manager sends once the
containers are gone). The API server keeps upstream's semantics meanwhile: the pod is
Terminating with its deletionTimestamp, and finalizers still hold it."""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Callable
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.pod import pod_info_from
from kubesched.api.podindex import PodsByNode
from kubesched.api.resources import parse_resource_list
from kubesched.api.watch import DELETED
from kubesched.clock import parse_rfc3339, rfc3339, rfc3339_micro
from kubesched.cluster.store import Store
from kubesched.controllers.workqueue import ItemBackoff
from kubesched.health import LoopHealth, describe
from kubesched.kubelet.node import (
    HOLLOW_DRIVER,
    NODE_INFO,
    ZONE_LABEL,
    stopped,
)

NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_LEASE_DURATION = 40  # kubelet's nodeLeaseDurationSeconds
NODE_LEASE_RENEW = 10.0  # renewInterval = 0.25 * lease duration
TERMINATION_DELAY = 0.5  # seconds from deletionTimestamp to the kubelet's final delete
POD_RUN_SECONDS = 1.0  # how long a run-to-completion pod (restartPolicy Never/OnFailure) runs
RUN_SECONDS_ANNOTATION = "kubesched.io/run-seconds"  # per pod: its run time ("-1": runs until deleted)
EXIT_CODE_ANNOTATION = "kubesched.io/exit-code"  # per pod: its containers' exit code (non-zero: Failed)


class HollowKubelet:
    """Drives every node and its pods; ``sync`` handles the changes seen since the last call."""

    def __init__(
        self,
        store: Store,
        notify: Callable[[], None] | None = None,
        termination_delay: float = TERMINATION_DELAY,
        attach_limit: int = 0,
        run_seconds: float = POD_RUN_SECONDS,
        health: LoopHealth | None = None,
    ) -> None:
        self.store = store
        self.health = health or LoopHealth()
        self._backoff = ItemBackoff()
        self.termination_delay = termination_delay
        self.run_seconds = run_seconds
        self._completing: set[str] = set()  # UIDs whose completion is scheduled
        self._stopped: set[str] = set()  # nodes whose kubelet is stopped
        self.attach_limit = attach_limit
        self._terminating: set[str] = set()  # UIDs whose final delete is scheduled
        self._watch = store.watch(["Node", "Pod"], store.resource_version, notify=notify)
        self._node_index: dict[str, int] = {}
        self._next_ip: dict[str, int] = {}
        # each node's pods, as the kubelet's own pod source (pods bound to it) gives them
        self._pods_on = PodsByNode()
        for pod in store.list("Pod")[0]:
            self._pods_on.track(pod, deleted=False)
        for node in store.list("Node")[0]:
            self._guarded("Node", node)
        for pod in store.list("Pod")[0]:
            self._guarded("Pod", pod)
        self._renew_later()

    def _guarded(self, kind: str, obj: dict[str, Any]) -> None:
        """One node's or pod's sync; when it raises (a pod's spec the kubelet cannot run, a bug of
        ours) the error is logged with the object and counted, the object is synced again after
        its backoff (the pod workers' retry), and every other object goes on."""
        meta = obj.get("metadata") or {}
        key = (kind, meta.get("namespace") or "", meta.get("name") or "")
        try:
            if kind == "Node":
                self._node(obj)
            else:
                self._pod(obj)
        except Exception as exc:
            self.health.error("kubelet", describe(kind, key[1:]), exc)
            self.store.clock.call_at(self.store.clock.now() + self._backoff.when(key), lambda: self._resync(key))
        else:
            self._backoff.forget(key)

    def _resync(self, key: tuple[str, str, str]) -> None:
        current = self.store.try_get(*key)
        if current is not None:
            self._guarded(key[0], current)

    def _renew_later(self) -> None:
        """Every kubelet renews its node's Lease each ``NODE_LEASE_RENEW`` seconds."""

        def renew() -> None:
            self.renew_all()
            self._renew_later()

        self.store.clock.call_at(self.store.clock.now() + NODE_LEASE_RENEW, renew)

    def sync(self) -> None:
        events = list(self._watch.drain())
        for ev in events:  # the index first: a node taken up below finds the pods bound meanwhile
            if ev.kind == "Pod":
                self._pods_on.track(ev.obj, deleted=ev.type == DELETED)
        for ev in events:
            if ev.type == DELETED:
                if ev.kind == "Node":
                    self._drop_lease(ev.obj["metadata"]["name"])
                    with contextlib.suppress(ApiError):  # the garbage collector: owned by the node
                        self.store.delete("CSINode", "", ev.obj["metadata"]["name"])
                continue
            current = self.store.try_get(
                ev.kind, (ev.obj.get("metadata") or {}).get("namespace") or "", ev.obj["metadata"]["name"]
            )
            if current is None or current is not ev.obj:
                continue  # a later event carries the newer version
            self._guarded(ev.kind, current)
        self.health.ok("kubelet")

    # -- nodes ---------------------------------------------------------------------------------
    def _index(self, name: str) -> int:
        if name not in self._node_index:
            self._node_index[name] = len(self._node_index)
        return self._node_index[name]

    def _csi_node(self, node: dict[str, Any]) -> None:
        """The CSINode a node's kubelet registers for its CSI driver (the hollow one): its attach
        limit, and the zone as its topology key when the node has one."""
        name = node["metadata"]["name"]
        if not self.attach_limit or self.store.try_get("CSINode", "", name) is not None:
            return
        labels = (node.get("metadata") or {}).get("labels") or {}
        driver: dict[str, Any] = {"name": HOLLOW_DRIVER, "nodeID": name, "allocatable": {"count": self.attach_limit}}
        driver["topologyKeys"] = [ZONE_LABEL] if ZONE_LABEL in labels else []
        owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"].get("uid")}
        csi_node = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name, "ownerReferences": [owner]},
            "spec": {"drivers": [driver]},
        }
        with contextlib.suppress(ApiError):
            self.store.create("CSINode", csi_node)

    def _node(self, node: dict[str, Any]) -> None:
        self._csi_node(node)
        name = node["metadata"]["name"]
        if stopped(node):
            self._stopped.add(name)
            return
        if name in self._stopped:  # started again: take up what was left
            self._stopped.discard(name)
            self._resume(node)
            return
        status = node.get("status") or {}
        conditions = status.get("conditions") or []
        info = status.get("nodeInfo") or {}
        if any(c.get("type") == "Ready" and c.get("status") != "True" for c in conditions):
            self._resume(node)
            return
        if any(c.get("type") == "Ready" for c in conditions) and all(k in info for k in NODE_INFO):
            return
        now = rfc3339(self.store.clock.now())
        ip = str(ipaddress.IPv4Address("10.96.0.0") + self._index(name) + 1)

        def ready(o: dict[str, Any]) -> dict[str, Any]:
            st = dict(o.get("status") or {})
            st.setdefault("capacity", st.get("allocatable") or {})
            st.setdefault("allocatable", st["capacity"])
            st["nodeInfo"] = {
                **NODE_INFO,
                "machineID": name,
                "systemUUID": name,
                "bootID": name,
                **(st.get("nodeInfo") or {}),
            }
            st.setdefault("addresses", [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}])
            st.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})
            st["phase"] = "Running"
            kinds = {c.get("type") for c in st.get("conditions") or []}
            conds = list(st.get("conditions") or [])
            for type_, value, reason, message in (
                ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ):
                if type_ not in kinds:
                    conds.append(
                        {
                            "type": type_,
                            "status": value,
                            "reason": reason,
                            "message": message,
                            "lastHeartbeatTime": now,
                            "lastTransitionTime": now,
                        }
                    )
            st["conditions"] = conds
            return {**o, "status": st}

        try:
            self.store.mutate("Node", "", name, ready)
        except ApiError:
            return
        self.renew_lease(name)

    def _resume(self, node: dict[str, Any]) -> None:
        """A kubelet back at work: it renews its Lease and posts its conditions again, and takes up
        the pods it left (starting bound ones, confirming deletions)."""
        name = node["metadata"]["name"]
        now = rfc3339(self.store.clock.now())
        healthy = {"Ready": "True", "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False"}
        reasons = {
            "Ready": ("KubeletReady", "kubelet is posting ready status"),
            "MemoryPressure": ("KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            "DiskPressure": ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            "PIDPressure": ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        }

        def ready(o: dict[str, Any]) -> dict[str, Any]:
            st = dict(o.get("status") or {})
            conds = []
            for c in st.get("conditions") or []:
                t = c.get("type")
                if t in healthy and c.get("status") != healthy[t]:
                    reason, message = reasons[t]
                    c = {
                        **c,
                        "status": healthy[t],
                        "reason": reason,
                        "message": message,
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                conds.append(c)
            return {**o, "status": {**st, "conditions": conds}}

        def pod_ready(o: dict[str, Any]) -> dict[str, Any]:
            st = dict(o.get("status") or {})
            conds = [
                {**c, "status": "True", "lastTransitionTime": now}
                if c.get("type") in ("Ready", "ContainersReady") and c.get("status") != "True"
                else c
                for c in st.get("conditions") or []
            ]
            return {**o, "status": {**st, "conditions": conds}}

        self.renew_lease(name)
        with contextlib.suppress(ApiError):
            self.store.mutate("Node", "", name, ready)
        for ns, pod_name in self._pods_on.keys(name):
            found = self.store.try_get("Pod", ns, pod_name)
            if found is None or (found.get("spec") or {}).get("nodeName") != name:
                continue
            pod = found
            meta = pod["metadata"]
            if (pod.get("status") or {}).get("phase") == "Running" and not meta.get("deletionTimestamp"):
                with contextlib.suppress(ApiError):  # the status manager posts the pod Ready again
                    pod = self.store.mutate("Pod", meta.get("namespace") or "default", meta["name"], pod_ready)
            self._pod(pod)

    def renew_lease(self, name: str) -> None:
        node = self.store.try_get("Node", "", name)
        if node is None or stopped(node):
            return
        now = rfc3339_micro(self.store.clock.now())
        lease = self.store.try_get("Lease", NODE_LEASE_NAMESPACE, name)
        try:
            if lease is None:
                self.store.create(
                    "Lease",
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {
                            "name": name,
                            "namespace": NODE_LEASE_NAMESPACE,
                            "ownerReferences": [
                                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
                            ],
                        },
                        "spec": {"holderIdentity": name, "leaseDurationSeconds": NODE_LEASE_DURATION, "renewTime": now},
                    },
                )
            else:
                self.store.mutate(
                    "Lease",
                    NODE_LEASE_NAMESPACE,
                    name,
                    lambda o: {**o, "spec": {**(o.get("spec") or {}), "renewTime": now}},
                )
        except ApiError:
            pass

    def renew_all(self) -> None:
        for node in self.store.list("Node")[0]:
            self.renew_lease(node["metadata"]["name"])

    def _drop_lease(self, name: str) -> None:
        if self.store.try_get("Lease", NODE_LEASE_NAMESPACE, name) is not None:
            self.store.delete("Lease", NODE_LEASE_NAMESPACE, name)

    # -- pods ----------------------------------------------------------------------------------
    def _pod(self, pod: dict[str, Any]) -> None:
        spec, status, meta = pod.get("spec") or {}, pod.get("status") or {}, pod["metadata"]
        node_name = spec.get("nodeName")
        if node_name and stopped(self.store.try_get("Node", "", node_name)):
            return  # nobody there to start it or to stop it
        if node_name and meta.get("deletionTimestamp"):
            self._terminate(meta.get("namespace") or "default", meta["name"], meta.get("uid") or "")
            return
        if node_name and status.get("phase") == "Running":
            self._resize(pod, node_name)
            self._ephemeral(pod)
            self._schedule_completion(pod)
            return
        if not node_name or status.get("phase") not in (None, "Pending"):
            return
        node = self.store.try_get("Node", "", node_name)
        if node is None:
            return
        now = rfc3339(self.store.clock.now())
        n = self._next_ip.get(node_name, 1)
        self._next_ip[node_name] = n % 65_000 + 1
        base = int(ipaddress.IPv4Address("10.128.0.0")) + (self._index(node_name) % 512) * 65_536
        pod_ip = str(ipaddress.IPv4Address(base + n))
        host_ip = next(
            (a["address"] for a in (node.get("status") or {}).get("addresses") or [] if a.get("type") == "InternalIP"),
            "",
        )

        def run(o: dict[str, Any]) -> dict[str, Any]:
            st = dict(o.get("status") or {})
            conds = [c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"]
            for type_ in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"):
                conds.append({"type": type_, "status": "True", "lastProbeTime": None, "lastTransitionTime": now})
            containers = (o.get("spec") or {}).get("containers") or []
            st.update(
                phase="Running",
                conditions=conds,
                hostIP=host_ip,
                hostIPs=[{"ip": host_ip}] if host_ip else [],
                podIP=pod_ip,
                podIPs=[{"ip": pod_ip}],
                startTime=now,
                containerStatuses=[
                    {
                        "name": c.get("name", ""),
                        "image": c.get("image", ""),
                        "imageID": c.get("image", ""),
                        "containerID": f"kubesched://{o['metadata'].get('uid', '')}-{i}",
                        "ready": True,
                        "started": True,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": now}},
                        **container_resources(c),
                    }
                    for i, c in enumerate(containers)
                ],
            )
            return {**o, "status": st}

        with contextlib.suppress(ApiError):
            self.store.mutate("Pod", meta.get("namespace") or "default", meta["name"], run)

    def _resize(self, pod: dict[str, Any], node_name: str) -> None:
        """In-place resize (the kubelet's allocation manager): a running pod whose containers' spec
        resources differ from what was allocated gets them when the node's allocatable covers its
        new requests beside the other pods (``status.containerStatuses[].allocatedResources`` and
        ``resources``), else a ``PodResizePending`` condition, reason Deferred, with the admission
        predicate's message; it is tried again at the pod's next change."""
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        by_name = {c.get("name"): c for c in spec.get("containers") or []}
        statuses = status.get("containerStatuses") or []
        wanted = {n: container_resources(c) for n, c in by_name.items()}
        if all(
            {k: cs.get(k) for k in ("allocatedResources", "resources") if k in cs} == wanted.get(cs.get("name"), {})
            for cs in statuses
        ):
            return
        node = self.store.try_get("Node", "", node_name)
        refusal = self._resize_refusal(pod, node) if node is not None else None
        now = rfc3339(self.store.clock.now())
        generation = int(pod["metadata"].get("generation") or 1)

        def apply(o: dict[str, Any]) -> dict[str, Any]:
            st = dict(o.get("status") or {})
            conds = [c for c in st.get("conditions") or [] if c.get("type") != "PodResizePending"]
            if refusal is None:
                current = {c.get("name"): c for c in (o.get("spec") or {}).get("containers") or []}
                st["containerStatuses"] = [
                    {
                        **{k: v for k, v in cs.items() if k not in ("allocatedResources", "resources")},
                        **container_resources(current.get(cs.get("name")) or {}),
                    }
                    for cs in st.get("containerStatuses") or []
                ]
                st["observedGeneration"] = generation
            else:
                conds.append(
                    {
                        "type": "PodResizePending",
                        "status": "True",
                        "observedGeneration": generation,
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                        "reason": "Deferred",
                        "message": refusal,
                    }
                )
            st["conditions"] = conds
            return {**o, "status": st}

        with contextlib.suppress(ApiError):
            self.store.mutate("Pod", pod["metadata"].get("namespace") or "default", pod["metadata"]["name"], apply)

    def _resize_refusal(self, pod: dict[str, Any], node: dict[str, Any]) -> str | None:
        """The admission predicate on a resize: the pod's new requests beside the other running
        pods' allocation, cpu then memory; None when they fit."""
        allocatable = parse_resource_list((node.get("status") or {}).get("allocatable"), "status.allocatable")
        mine = pod_info_from({**pod, "status": {}}).requests
        used: dict[str, int] = {}
        node_name = node["metadata"]["name"]
        for ns, name in self._pods_on.keys(node_name):
            other = self.store.try_get("Pod", ns, name)
            if other is None or other["metadata"].get("uid") == pod["metadata"].get("uid"):
                continue
            if (other.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for k, v in pod_info_from(other).requests.items():
                used[k] = used.get(k, 0) + v
        for resource in ("cpu", "memory"):
            want, have, cap = mine.get(resource, 0), used.get(resource, 0), allocatable.get(resource, 0)
            if want + have > cap:
                return f"Node didn't have enough resource: {resource}, requested: {want}, used: {have}, capacity: {cap}"
        return None

    def _ephemeral(self, pod: dict[str, Any]) -> None:
        """Start the ephemeral containers ``kubectl debug`` added (``ephemeralContainerStatuses``,
        running, never ready: the kubelet does not probe them)."""
        added = (pod.get("spec") or {}).get("ephemeralContainers") or []
        known = {s.get("name") for s in (pod.get("status") or {}).get("ephemeralContainerStatuses") or []}
        if all(c.get("name") in known for c in added):
            return
        now = rfc3339(self.store.clock.now())
        meta = pod["metadata"]

        def start(o: dict[str, Any]) -> dict[str, Any]:
            st = dict(o.get("status") or {})
            statuses = list(st.get("ephemeralContainerStatuses") or [])
            have = {s.get("name") for s in statuses}
            for c in (o.get("spec") or {}).get("ephemeralContainers") or []:
                if c.get("name") not in have:
                    statuses.append(
                        {
                            "name": c.get("name", ""),
                            "image": c.get("image", ""),
                            "imageID": c.get("image", ""),
                            "containerID": f"kubesched://{o['metadata'].get('uid', '')}-{c.get('name', '')}",
                            "ready": False,
                            "restartCount": 0,
                            "state": {"running": {"startedAt": now}},
                        }
                    )
            st["ephemeralContainerStatuses"] = statuses
            return {**o, "status": st}

        with contextlib.suppress(ApiError):
            self.store.mutate("Pod", meta.get("namespace") or "default", meta["name"], start)

    def _terminate(self, namespace: str, name: str, uid: str) -> None:
        """Confirm a graceful deletion once the (hollow) containers are stopped."""
        if uid in self._terminating:
            return
        self._terminating.add(uid)

        def confirm() -> None:
            self._terminating.discard(uid)
            pod = self.store.try_get("Pod", namespace, name)
            if pod is None or pod["metadata"].get("uid") != uid or not pod["metadata"].get("deletionTimestamp"):
                return
            with contextlib.suppress(ApiError):
                self.store.delete("Pod", namespace, name, 0, uid=uid)

        if self.termination_delay <= 0:
            confirm()
        else:
            self.store.clock.call_at(self.store.clock.now() + self.termination_delay, confirm)

    # -- run to completion ---------------------------------------------------------------------------
    def _run_time(self, pod: dict[str, Any]) -> float | None:
        """How long the pod's containers run before they exit: None for pods that restart
        forever (restartPolicy Always) or are told to run until deleted."""
        if (pod.get("spec") or {}).get("restartPolicy", "Always") == "Always":
            return None
        raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(RUN_SECONDS_ANNOTATION)
        if raw is None:
            return self.run_seconds
        try:
            seconds = float(str(raw).removesuffix("s"))
        except ValueError:
            return self.run_seconds
        return None if seconds < 0 else seconds

    def _schedule_completion(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid = meta.get("uid") or ""
        run = self._run_time(pod)
        if run is None or uid in self._completing:
            return
        self._completing.add(uid)
        started = (pod.get("status") or {}).get("startTime")
        start = parse_rfc3339(started) if started else self.store.clock.now()
        namespace, name = meta.get("namespace") or "default", meta["name"]

        def complete() -> None:
            self._completing.discard(uid)
            current = self.store.try_get("Pod", namespace, name)
            if current is None or current["metadata"].get("uid") != uid:
                return
            if (current.get("status") or {}).get("phase") != "Running" or current["metadata"].get("deletionTimestamp"):
                return
            with contextlib.suppress(ApiError):
                self.store.mutate("Pod", namespace, name, self._finished)

        self.store.clock.call_at(start + run, complete)

    def _finished(self, o: dict[str, Any]) -> dict[str, Any]:
        """The pod once its containers exited: Succeeded with exit code 0 (reason Completed),
        else Failed (reason Error); Ready and ContainersReady False with reason PodCompleted."""
        raw = ((o.get("metadata") or {}).get("annotations") or {}).get(EXIT_CODE_ANNOTATION, "0")
        try:
            code = int(raw)
        except ValueError:
            code = 1
        now = rfc3339(self.store.clock.now())
        st = dict(o.get("status") or {})
        conds = []
        for c in st.get("conditions") or []:
            if c.get("type") in ("Ready", "ContainersReady"):
                c = {**c, "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}
            conds.append(c)
        statuses = []
        for c in st.get("containerStatuses") or []:
            started = ((c.get("state") or {}).get("running") or {}).get("startedAt", now)
            terminated = {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": started,
                "finishedAt": now,
                "containerID": c.get("containerID", ""),
            }
            statuses.append({**c, "ready": False, "started": False, "state": {"terminated": terminated}})
        st.update(phase="Succeeded" if code == 0 else "Failed", conditions=conds, containerStatuses=statuses)
        return {**o, "status": st}


def container_resources(container: dict[str, Any]) -> dict[str, Any]:
    """What the kubelet reports of a running container's resources: its allocation (the requests)
    and what it actuated (requests and limits)."""
    res = container.get("resources") or {}
    out: dict[str, Any] = {}
    if res.get("requests"):
        out["allocatedResources"] = dict(res["requests"])
    actuated = {k: dict(res[k]) for k in ("requests", "limits") if res.get(k)}
    out["resources"] = actuated
    return out
