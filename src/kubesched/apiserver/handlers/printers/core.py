"""The Table columns of the core group (pods, nodes, events, services, volumes, namespaces, ...),
as ``pkg/printers/internalversion/printers.go`` prints them."""

from __future__ import annotations

from typing import Any

from kubesched.apiserver.handlers.printers.common import (
    Printer,
    Row,
    age,
    col,
    containers_images,
    n,
    name_col,
)


def _pod_row(o: dict[str, Any], now: float) -> Row:
    """``printPod``: the phase, or the reason a condition or container state gives."""
    spec, status, meta = o.get("spec") or {}, o.get("status") or {}, o.get("metadata") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    reason = status.get("reason") or status.get("phase") or "Pending"
    conditions = status.get("conditions") or []
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions):
        reason = "SchedulingGated"
    ready = restarts = 0
    has_running = False
    for c in reversed(statuses):
        restarts += int(c.get("restartCount") or 0)
        state = c.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated is not None and terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated is not None:
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif c.get("ready") and state.get("running") is not None:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        reason = "Running" if pod_ready else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and status.get("phase") not in ("Succeeded", "Failed"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [
        meta.get("name"),
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        age(now, meta.get("creationTimestamp")),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if gates else "<none>",
    ]


def _format_labels(labels: dict[str, Any] | None) -> str:
    """``labels.FormatLabels``: sorted ``k=v`` pairs, ``<none>`` for none."""
    return ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or "<none>"


def _pod_template_row(o: dict[str, Any], now: float) -> Row:
    template = o.get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return [
        (o.get("metadata") or {}).get("name"),
        names,
        images,
        _format_labels((template.get("metadata") or {}).get("labels")),
    ]


def _node_row(o: dict[str, Any], now: float) -> Row:
    spec, status, meta = o.get("spec") or {}, o.get("status") or {}, o.get("metadata") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Ready" if ready and ready.get("status") == "True" else ("NotReady" if ready else "Unknown")
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in (meta.get("labels") or {}) if k.startswith("node-role.kubernetes.io/"))
    info = status.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        meta.get("name"),
        state,
        ",".join(r for r in roles if r) or "<none>",
        age(now, meta.get("creationTimestamp")),
        info.get("kubeletVersion", ""),
        addrs.get("InternalIP") or "<none>",
        addrs.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _event_row(o: dict[str, Any], now: float) -> Row:
    """``printEvent``: a series' lastObservedTime, else lastTimestamp, else the first time. An
    events.k8s.io/v1 Event is printed as its core v1 form is (kube-apiserver converts both to
    the internal Event), so its deprecated* fields and regarding/note fill the same columns."""
    inv = o.get("involvedObject") or o.get("regarding") or {}
    series = o.get("series") or {}
    last = (
        series.get("lastObservedTime")
        or o.get("lastTimestamp")
        or o.get("deprecatedLastTimestamp")
        or o.get("firstTimestamp")
        or o.get("deprecatedFirstTimestamp")
        or o.get("eventTime")
    )
    return [
        age(now, last),
        o.get("type"),
        o.get("reason"),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        o.get("message") if "message" in o else o.get("note"),
    ]


def _configmap_row(o: dict[str, Any], now: float) -> Row:
    """``printConfigMap``: how many keys, in data and binaryData together."""
    meta = o.get("metadata") or {}
    keys = len(o.get("data") or {}) + len(o.get("binaryData") or {})
    return [meta.get("name"), keys, age(now, meta.get("creationTimestamp"))]


def _service_row(o: dict[str, Any], now: float) -> Row:
    """``printService``: type, cluster IP, external IP, ports (``port[:nodePort]/protocol``), age,
    and the selector when wide."""
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    kind = spec.get("type") or "ClusterIP"
    external = ",".join(spec.get("externalIPs") or []) or "<none>"
    if kind == "LoadBalancer":
        ingress = [
            i.get("ip") or i.get("hostname")
            for i in ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        ]
        external = ",".join([*(x for x in ingress if x), *(spec.get("externalIPs") or [])]) or "<pending>"
    elif kind == "ExternalName":
        external = spec.get("externalName") or ""
    ports = ",".join(
        f"{p.get('port')}:{p['nodePort']}/{p.get('protocol', 'TCP')}"
        if p.get("nodePort")
        else f"{p.get('port')}/{p.get('protocol', 'TCP')}"
        for p in spec.get("ports") or []
    )
    cluster_ip = (spec.get("clusterIPs") or [None])[0] or "<none>"
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return [
        meta.get("name"),
        kind,
        cluster_ip,
        external,
        ports or "<none>",
        age(now, meta.get("creationTimestamp")),
        selector,
    ]


def _endpoints_row(o: dict[str, Any], now: float) -> Row:
    """``printEndpoints``: up to three ``ip:port`` pairs, then how many more."""
    meta = o.get("metadata") or {}
    pairs = [
        f"{a.get('ip')}:{p.get('port')}"
        for s in o.get("subsets") or []
        for p in s.get("ports") or [{}]
        for a in s.get("addresses") or []
    ]
    shown = ",".join(pairs[:3]) + (f" + {len(pairs) - 3} more..." if len(pairs) > 3 else "")
    return [meta.get("name"), shown or "<none>", age(now, meta.get("creationTimestamp"))]


def _rc_row(o: dict[str, Any], now: float) -> Row:
    """``printReplicationController``: desired, current and ready replicas."""
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    names, images = containers_images(o)
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return [
        meta.get("name"),
        int(spec.get("replicas") or 0),
        n(o, "replicas"),
        n(o, "readyReplicas"),
        age(now, meta.get("creationTimestamp")),
        names,
        images,
        selector,
    ]


def _secret_row(o: dict[str, Any], now: float) -> Row:
    """``printSecret``: its type and how many keys."""
    meta = o.get("metadata") or {}
    return [meta.get("name"), o.get("type") or "", len(o.get("data") or {}), age(now, meta.get("creationTimestamp"))]


def _quota_row(o: dict[str, Any], now: float) -> Row:
    """``printResourceQuota``: ``name: used/hard`` per resource, sorted, the limits.* ones apart."""
    meta, status = o.get("metadata") or {}, o.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        (limits if name.split(".")[0] == "limits" and "." in name else requests).append(
            f"{name}: {used.get(name, '0')}/{hard[name]}"
        )
    return [meta.get("name"), ", ".join(requests), ", ".join(limits), age(now, meta.get("creationTimestamp"))]


def _serviceaccount_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), len(o.get("secrets") or []), age(now, meta.get("creationTimestamp"))]


def _ns_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [
        meta.get("name"),
        (o.get("status") or {}).get("phase") or "Active",
        age(now, meta.get("creationTimestamp")),
    ]


_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: list[str] | None) -> str:
    """``GetAccessModesAsString``: the short names, in a fixed order."""
    have = set(modes or [])
    return ",".join(short for mode, short in _MODES if mode in have)


def _phase(o: dict[str, Any]) -> str:
    if (o.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return str((o.get("status") or {}).get("phase") or "")


def _pv_row(o: dict[str, Any], now: float) -> Row:
    """``printPersistentVolume``."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    ref = spec.get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
    return [
        meta.get("name"),
        str((spec.get("capacity") or {}).get("storage", "")),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy") or "",
        _phase(o),
        claim,
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason") or "",
        age(now, meta.get("creationTimestamp")),
        spec.get("volumeMode") or "Filesystem",
    ]


def _pvc_row(o: dict[str, Any], now: float) -> Row:
    """``printPersistentVolumeClaim``: capacity and access modes once bound."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    bound = bool(spec.get("volumeName"))
    return [
        meta.get("name"),
        _phase(o),
        spec.get("volumeName") or "",
        str((status.get("capacity") or {}).get("storage", "")) if bound else "",
        _access_modes(status.get("accessModes")) if bound else "",
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or "<unset>",
        age(now, meta.get("creationTimestamp")),
        spec.get("volumeMode") or "Filesystem",
    ]


PRINTERS: dict[str, Printer] = {
    "PodTemplate": (
        [name_col(), col("Containers"), col("Images"), col("Pod Labels")],
        _pod_template_row,
    ),
    "Pod": (
        [
            name_col(),
            col("Ready"),
            col("Status"),
            col("Restarts", type_="integer"),
            col("Age"),
            col("IP", 1),
            col("Node", 1),
            col("Nominated Node", 1),
            col("Readiness Gates", 1),
        ],
        _pod_row,
    ),
    "Node": (
        [
            name_col(),
            col("Status"),
            col("Roles"),
            col("Age"),
            col("Version"),
            col("Internal-IP", 1),
            col("External-IP", 1),
            col("OS-Image", 1),
            col("Kernel-Version", 1),
            col("Container-Runtime", 1),
        ],
        _node_row,
    ),
    "Event": ([col("Last Seen"), col("Type"), col("Reason"), col("Object"), col("Message")], _event_row),
    "ConfigMap": ([name_col(), col("Data"), col("Age")], _configmap_row),
    "ServiceAccount": ([name_col(), col("Secrets"), col("Age")], _serviceaccount_row),
    "Secret": ([name_col(), col("Type"), col("Data"), col("Age")], _secret_row),
    "ReplicationController": (
        [
            name_col(),
            col("Desired", type_="integer"),
            col("Current", type_="integer"),
            col("Ready", type_="integer"),
            col("Age"),
            col("Containers", priority=1),
            col("Images", priority=1),
            col("Selector", priority=1),
        ],
        _rc_row,
    ),
    "Endpoints": ([name_col(), col("Endpoints"), col("Age")], _endpoints_row),
    "Service": (
        [
            name_col(),
            col("Type"),
            col("Cluster-IP"),
            col("External-IP"),
            col("Port(s)"),
            col("Age"),
            col("Selector", priority=1),
        ],
        _service_row,
    ),
    "ResourceQuota": ([name_col(), col("Request"), col("Limit"), col("Age")], _quota_row),
    "Namespace": ([name_col(), col("Status"), col("Age")], _ns_row),
    "PersistentVolume": (
        [
            name_col(),
            col("Capacity"),
            col("Access Modes"),
            col("Reclaim Policy"),
            col("Status"),
            col("Claim"),
            col("StorageClass"),
            col("VolumeAttributesClass"),
            col("Reason"),
            col("Age"),
            col("VolumeMode", 1),
        ],
        _pv_row,
    ),
    "PersistentVolumeClaim": (
        [
            name_col(),
            col("Status"),
            col("Volume"),
            col("Capacity"),
            col("Access Modes"),
            col("StorageClass"),
            col("VolumeAttributesClass"),
            col("Age"),
            col("VolumeMode", 1),
        ],
        _pvc_row,
    ),
}
