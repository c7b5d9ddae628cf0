"""Random clusters for the differential tests against upstream's scheduler: a few nodes (labels,
zones, taints, resources, an unschedulable one now and then), pods bound to them (requests, host
ports, priorities, PodDisruptionBudgets over them), a life lived (``age``: pods finished,
terminating or another scheduler's, nodes cordoned or NotReady with the node lifecycle
controller's taints), and one pending pod, ``incoming`` (now and then still nominated to a node by
an earlier preemption), drawing on
everything the default profile looks at: requests with init and sidecar containers and a
RuntimeClass's overhead, node selectors and node affinity, tolerations, topology spread, pod
affinity and anti-affinity, host ports, priorities that preempt, persistent volume claims (bound,
delayed binding over local volumes, missing) and a DRA claim on devices the nodes publish.

``make_case(rng)`` takes anything with ``random.Random``'s methods: a seeded ``random.Random``
for the large run (``scripts/differential.py``), hypothesis' ``st.randoms()`` in the tests, so that
a disagreement shrinks to a small cluster. Bound pods get distinct priorities, which makes
preemption's choice of node and victims unique (``pickOneNodeForPreemption`` then never falls
through to upstream's random order of candidates). ``age`` and the nomination draw after everything
else, so a seed makes the same cluster as before they existed, then ages it."""

from __future__ import annotations

from typing import Any, Protocol

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("web", "db", "cache")
DRIVER = "gpu.example.com"


class Rng(Protocol):
    def random(self) -> float: ...
    def randint(self, a: int, b: int) -> int: ...
    def choice(self, seq: Any) -> Any: ...
    def sample(self, population: Any, k: int) -> list[Any]: ...


def chance(rng: Rng, p: float) -> bool:
    return rng.random() < p


def node(i: int, rng: Rng) -> dict[str, Any]:
    name = f"n{i}"
    labels = {HOST: name, ZONE: rng.choice("abc")}
    if chance(rng, 0.4):
        labels["disk"] = rng.choice(["ssd", "hdd"])
    spec: dict[str, Any] = {}
    if chance(rng, 0.25):
        spec["taints"] = [
            {"key": "dedicated", "value": "gpu", "effect": rng.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"])}
        ]
    if chance(rng, 0.05):
        spec["unschedulable"] = True
    allocatable = {
        "cpu": rng.choice(["2", "4", "8", "16", "3500m"]),
        "memory": rng.choice(["4Gi", "8Gi", "32Gi"]),
        "pods": rng.choice(["110", "110", "110", "4"]),
        "ephemeral-storage": "100Gi",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def requests(rng: Rng) -> dict[str, str]:
    out = {"cpu": rng.choice(["100m", "250m", "500m", "1", "2", "3"])}
    if chance(rng, 0.7):
        out["memory"] = rng.choice(["128Mi", "512Mi", "1Gi", "4Gi"])
    return out


def container(name: str, rng: Rng, *, port: int | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "pause", "resources": {"requests": requests(rng)}}
    if port:
        c["ports"] = [{"containerPort": 80, "hostPort": port, "protocol": "TCP"}]
    return c


def priority_classes(bound: int, rng: Rng) -> tuple[list[dict[str, Any]], list[int]]:
    """low, mid, high, never (high, preemptionPolicy Never), and one distinct class per bound pod."""
    values = rng.sample(range(1, 2000), bound)
    fixed = [("low", 10, None), ("mid", 500, None), ("high", 1500, None), ("never", 1500, "Never")]
    out = []
    for name, value, policy in [*fixed, *((f"b{i}", v, None) for i, v in enumerate(values))]:
        pc: dict[str, Any] = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        if policy:
            pc["preemptionPolicy"] = policy
        out.append(pc)
    return out, values


def milli(q: str) -> int:
    """A cpu or memory quantity of this module's forms, in milli-units."""
    for suffix, factor in (("Gi", 1024**3 * 1000), ("Mi", 1024**2 * 1000), ("m", 1)):
        if q.endswith(suffix):
            return int(q[: -len(suffix)]) * factor
    return int(q) * 1000


def bound_pods(count: int, rng: Rng, nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods the kubelet has admitted: each fits what its node has left, at most one per node holds
    host port 8080, and each tolerates every taint (no NoExecute eviction to run first)."""
    left = {
        n["metadata"]["name"]: {
            "cpu": milli(n["status"]["allocatable"]["cpu"]),
            "memory": milli(n["status"]["allocatable"]["memory"]),
            "pods": int(n["status"]["allocatable"]["pods"]) * 1000,
        }
        for n in nodes
    }
    ported: set[str] = set()
    out = []
    for i in range(count):
        name = rng.choice(nodes)["metadata"]["name"]
        port = 8080 if chance(rng, 0.15) and name not in ported else None
        c = container("c", rng, port=port)
        need = {k: milli(v) for k, v in c["resources"]["requests"].items()} | {"pods": 1000}
        if any(need[k] > left[name][k] for k in need):
            continue
        for k in need:
            left[name][k] -= need[k]
        if port:
            ported.add(name)
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"b{i}", "namespace": "default", "labels": {"app": rng.choice(APPS)}},
                "spec": {
                    "nodeName": name,
                    "priorityClassName": f"b{i}",
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [c],
                },
            }
        )
    return out


def selector_term(key: str, values: list[str]) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}


def affinity(rng: Rng) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node_affinity: dict[str, Any] = {}
    if chance(rng, 0.15):
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [selector_term(ZONE, rng.sample(list("abc"), rng.randint(1, 2)))]
        }
    if chance(rng, 0.4):
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.choice([1, 50, 100]), "preference": selector_term(ZONE, [rng.choice("abc")])}
        ]
    if node_affinity:
        out["nodeAffinity"] = node_affinity
    for kind, p_required, p_preferred in (("podAffinity", 0.1, 0.2), ("podAntiAffinity", 0.15, 0.3)):
        terms: dict[str, Any] = {}
        if chance(rng, p_required):
            terms["requiredDuringSchedulingIgnoredDuringExecution"] = [
                {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}, "topologyKey": rng.choice([HOST, ZONE])}
            ]
        if chance(rng, p_preferred):
            terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": rng.choice([1, 50, 100]),
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
                        "topologyKey": rng.choice([HOST, ZONE]),
                    },
                }
            ]
        if terms:
            out[kind] = terms
    return out


def spread(rng: Rng, app: str) -> list[dict[str, Any]]:
    out = []
    for key in rng.sample([ZONE, HOST], rng.randint(1, 2)):
        c: dict[str, Any] = {
            "maxSkew": rng.choice([1, 1, 2]),
            "topologyKey": key,
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": {"matchLabels": {"app": rng.choice([app, *APPS])}},
        }
        if c["whenUnsatisfiable"] == "DoNotSchedule" and chance(rng, 0.2):
            c["minDomains"] = rng.randint(2, 4)
        if chance(rng, 0.2):
            c["nodeTaintsPolicy"] = "Honor"
        out.append(c)
    return out


def volumes(rng: Rng, nodes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(objects, the pod's volumes): a claim bound to a local volume on one node, or a delayed-binding
    claim over local volumes on some nodes, or a claim that does not exist."""
    names = [n["metadata"]["name"] for n in nodes]
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }

    def pv(name: str, on: str | None, claim: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "capacity": {"storage": rng.choice(["5Gi", "10Gi", "20Gi"])},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
        }
        if on is None:  # a network volume: every node reaches it
            spec["hostPath"] = {"path": "/srv/share"}
        else:
            spec["local"] = {"path": "/mnt/disk"}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [selector_term(HOST, [on])]}}
        if claim:
            spec["claimRef"] = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": "default",
                "name": claim,
            }
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": spec,
            "status": {"phase": "Bound" if claim else "Available"},
        }

    def pvc(name: str, volume: str | None = None) -> dict[str, Any]:
        claim: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "resources": {"requests": {"storage": rng.choice(["1Gi", "8Gi", "15Gi"])}},
            },
            "status": {"phase": "Bound" if volume else "Pending"},
        }
        if volume:
            claim["spec"]["volumeName"] = volume
            claim["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        return claim

    kind = rng.choice(["bound", "delayed", "delayed", "missing"])
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    if kind == "missing":
        return [], volume
    if kind == "bound":
        on = rng.choice([*names, None])
        return [storage_class, pv("pv-data", on, "data"), pvc("data", "pv-data")], volume
    local: list[dict[str, Any]] = [pv(f"pv-{n}", n) for n in rng.sample(names, rng.randint(0, len(names)))]
    if chance(rng, 0.3):
        local.append(pv("pv-shared", None))
    return [storage_class, *local, pvc("data")], volume


def devices(rng: Rng, nodes: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(objects, the pod's claim): a DeviceClass, each of some nodes' ResourceSlice of GPUs, and a
    ResourceClaim asking for one to three of them, or (half the time) a prioritized list of three,
    two, one."""
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    ]
    for n in nodes:
        if chance(rng, 0.6):
            name = n["metadata"]["name"]
            objects.append(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-gpus"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": name,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"gpu-{k}"} for k in range(rng.randint(1, 3))],
                    },
                }
            )
    count = rng.randint(1, 3)
    request: dict[str, Any] = {
        "name": "gpu",
        "exactly": {"deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": count},
    }
    if count > 1 and len(objects) % 2 == 1:  # an even number of slices (no draw: the seeds' cases stay)
        # a prioritized list: as many as asked, else fewer (DynamicResources scores the choice)
        request = {
            "name": "gpu",
            "firstAvailable": [
                {"name": f"x{k}", "deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": k}
                for k in range(count, 0, -1)
            ],
        }
    objects.append(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "gpus", "namespace": "default"},
            "spec": {"devices": {"requests": [request]}},
        }
    )
    return objects, {"name": "gpu", "resourceClaimName": "gpus"}


RUNTIME_CLASS = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": "kata"},
    "handler": "kata",
    "overhead": {"podFixed": {"cpu": "250m", "memory": "128Mi"}},
}


def incoming(rng: Rng, nodes: list[dict[str, Any]], extra: list[dict[str, Any]]) -> dict[str, Any]:
    app = rng.choice(APPS)
    containers = [container("c", rng, port=8080 if chance(rng, 0.1) else None)]
    if chance(rng, 0.2):
        containers.append(container("c2", rng))
    spec: dict[str, Any] = {"containers": containers}
    if chance(rng, 0.2):
        spec["initContainers"] = [container("init", rng)]
    if chance(rng, 0.2):
        sidecar = container("sidecar", rng)
        sidecar["restartPolicy"] = "Always"
        spec.setdefault("initContainers", []).append(sidecar)
    if chance(rng, 0.15):
        spec["runtimeClassName"] = "kata"
        extra.append(RUNTIME_CLASS)
    if chance(rng, 0.1):
        spec["nodeSelector"] = {"disk": "ssd"}
    if chance(rng, 0.3):
        spec["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": rng.choice(["NoSchedule", "NoExecute"])}
        ]
    if a := affinity(rng):
        spec["affinity"] = a
    if chance(rng, 0.3):
        spec["topologySpreadConstraints"] = spread(rng, app)
    if chance(rng, 0.6):
        spec["priorityClassName"] = rng.choice(["low", "mid", "high", "high", "never"])
    if chance(rng, 0.15):
        objects, vols = volumes(rng, nodes)
        extra.extend(objects)
        spec["volumes"] = vols
    if chance(rng, 0.15):
        objects, claim = devices(rng, nodes)
        extra.extend(objects)
        spec["resourceClaims"] = [claim]
        containers[0]["resources"]["claims"] = [{"name": claim["name"]}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "incoming", "namespace": "default", "labels": {"app": app}},
        "spec": spec,
    }


def make_case(rng: Rng) -> list[dict[str, Any]]:
    """One cluster: its nodes, bound pods and their classes and budgets, and the pending ``incoming``."""
    nodes = [node(i, rng) for i in range(rng.randint(2, 6))]
    count = rng.randint(0, 8)
    classes, _ = priority_classes(count, rng)
    bound = bound_pods(count, rng, nodes)
    budgets = []
    if bound and chance(rng, 0.3):
        budgets.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "budget", "namespace": "default"},
                "spec": {
                    "minAvailable": rng.randint(0, 2),
                    "selector": {"matchLabels": {"app": rng.choice(APPS)}},
                },
            }
        )
    extra: list[dict[str, Any]] = []
    pending = incoming(rng, nodes, extra)
    age(rng, nodes, bound)
    if chance(rng, 0.1):
        # still nominated by an earlier preemption (drawn last: the draws before stay a seed's own)
        pending["status"] = {"phase": "Pending", "nominatedNodeName": rng.choice(nodes)["metadata"]["name"]}
    return [*classes, *nodes, *extra, *bound, *budgets, pending]


def age(rng: Rng, nodes: list[dict[str, Any]], bound: list[dict[str, Any]]) -> None:
    """What a cluster in use holds: some bound pods have finished (Succeeded or Failed: they no
    longer hold their room), some are terminating (a finalizer holds them), some were placed by
    another scheduler; a node is now and then cordoned or NotReady, with the taints the node
    lifecycle controller adds (``TaintNodesByCondition``)."""
    for pod in bound:
        roll = rng.random()
        if roll < 0.1:
            pod["status"] = {"phase": "Succeeded"}
        elif roll < 0.15:
            pod["status"] = {"phase": "Failed"}
        else:
            pod["status"] = {"phase": "Running"}
            if roll < 0.25:
                pod["metadata"] |= {
                    "finalizers": ["example.com/hold"],
                    "deletionTimestamp": "2026-01-01T00:00:00Z",
                    "deletionGracePeriodSeconds": 30,
                }
        if chance(rng, 0.1):
            pod["spec"]["schedulerName"] = "other-scheduler"
    for n in nodes:
        spec, status = n["spec"], n["status"]
        ready = not chance(rng, 0.08)
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
        if not ready:
            spec["taints"] = [
                *(spec.get("taints") or []),
                *({"key": "node.kubernetes.io/not-ready", "effect": e} for e in ("NoSchedule", "NoExecute")),
            ]
        if spec.get("unschedulable"):
            spec["taints"] = [
                *(spec.get("taints") or []),
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            ]
        elif chance(rng, 0.04):
            spec["unschedulable"] = True
            spec["taints"] = [
                *(spec.get("taints") or []),
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            ]
