"""``meta.k8s.io/v1`` Table responses with the columns of upstream's printers
(``pkg/printers/internalversion/printers.go``), rendered on the server as kube-apiserver does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.selectors import format_label_selector
from kubesched.clock import parse_rfc3339

Row = list[Any]
Printer = tuple[list[dict[str, Any]], Callable[[dict[str, Any], float], Row]]


def human_duration(seconds: float) -> str:
    """apimachinery ``duration.HumanDuration``."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        d = h // 24
        return f"{d // 365}y{d % 365}d" if d % 365 else f"{d // 365}y"
    return f"{h // 24 // 365}y"


def _age(now: float, stamp: str | None) -> str:
    if not stamp:
        return "<unknown>"
    try:
        return human_duration(now - parse_rfc3339(stamp))
    except ValueError:
        return "<unknown>"


def _col(name: str, priority: int = 0, type_: str = "string", fmt: str = "", description: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description or name, "priority": priority}


def _name_col() -> dict[str, Any]:
    return _col("Name", fmt="name", description="Name must be unique within a namespace.")


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
        _age(now, meta.get("creationTimestamp")),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if gates else "<none>",
    ]


def _containers_images(o: dict[str, Any]) -> tuple[str, str]:
    """``layoutContainerCells``: the template's container names and images."""
    containers = ((((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    return ",".join(str(c.get("name", "")) for c in containers), ",".join(str(c.get("image", "")) for c in containers)


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


def _ingress_hosts(rules: list[Any]) -> str:
    """``formatHosts``: the first three hosts, and how many rules more."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and (rule or {}).get("host"):
            hosts.append(str(rule["host"]))
    if not hosts:
        return "*"
    return ",".join(hosts) + (f" + {len(rules) - 3} more..." if more else "")


def _ingress_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    points = ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    address = ",".join(
        sorted({str(i.get("ip") or i.get("hostname")) for i in points if i.get("ip") or i.get("hostname")})
    )
    if len(address) > 16:  # loadBalancerWidth, clipped unless wide
        address = address[:13] + "..."
    return [
        meta.get("name"),
        spec.get("ingressClassName") or "<none>",
        _ingress_hosts(spec.get("rules") or []),
        address,
        "80, 443" if spec.get("tls") else "80",
        _age(now, meta.get("creationTimestamp")),
    ]


def _ingress_class_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    name = meta.get("name")
    if ((meta.get("annotations") or {}).get("ingressclass.kubernetes.io/is-default-class") or "").lower() == "true":
        name = f"{name} (default)"
    params = spec.get("parameters")
    shown = "<none>"
    if params:
        shown = str(params.get("kind", "")) + (f".{params['apiGroup']}" if params.get("apiGroup") else "")
        shown += f"/{params.get('name', '')}"
    return [name, spec.get("controller", ""), shown, _age(now, meta.get("creationTimestamp"))]


def _selector(o: dict[str, Any]) -> str:
    return format_label_selector((o.get("spec") or {}).get("selector")) or "<none>"


def _n(o: dict[str, Any], field: str) -> int:
    return int((o.get("status") or {}).get(field) or 0)


def _deployment_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    names, images = _containers_images(o)
    return [
        meta.get("name"),
        f"{_n(o, 'readyReplicas')}/{int(spec.get('replicas', 1))}",
        _n(o, "updatedReplicas"),
        _n(o, "availableReplicas"),
        _age(now, meta.get("creationTimestamp")),
        names,
        images,
        _selector(o),
    ]


def _replicaset_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    names, images = _containers_images(o)
    return [
        meta.get("name"),
        int(spec.get("replicas", 1)),
        _n(o, "replicas"),
        _n(o, "readyReplicas"),
        _age(now, meta.get("creationTimestamp")),
        names,
        images,
        _selector(o),
    ]


def _statefulset_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    names, images = _containers_images(o)
    return [
        meta.get("name"),
        f"{_n(o, 'readyReplicas')}/{int(spec.get('replicas', 1))}",
        _age(now, meta.get("creationTimestamp")),
        names,
        images,
    ]


def _daemonset_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    names, images = _containers_images(o)
    selector = ((((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector")) or {}
    return [
        meta.get("name"),
        _n(o, "desiredNumberScheduled"),
        _n(o, "currentNumberScheduled"),
        _n(o, "numberReady"),
        _n(o, "updatedNumberScheduled"),
        _n(o, "numberAvailable"),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
        _age(now, meta.get("creationTimestamp")),
        names,
        images,
        _selector(o),
    ]


def _job_status(o: dict[str, Any]) -> str:
    """``printJob``'s STATUS: the terminal condition, else Terminating, Suspended, the interim
    conditions, else Running."""
    true = {c.get("type") for c in (o.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
    if "Complete" in true:
        return "Complete"
    if "Failed" in true:
        return "Failed"
    if (o.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for t in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if t in true:
            return t
    return "Running"


def _job_row(o: dict[str, Any], now: float) -> Row:
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    names, images = _containers_images(o)
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    else:
        completions = f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    duration = ""
    if status.get("startTime"):
        start = parse_rfc3339(status["startTime"])
        end = parse_rfc3339(status["completionTime"]) if status.get("completionTime") else now
        duration = human_duration(end - start)
    return [
        meta.get("name"),
        _job_status(o),
        completions,
        duration,
        _age(now, meta.get("creationTimestamp")),
        names,
        images,
        _selector(o),
    ]


def _revision_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    owner = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    controller = (
        f"{str(owner.get('kind', '')).lower()}.{owner.get('apiVersion', '').split('/')[0]}/{owner.get('name')}"
        if owner
        else "<none>"
    )
    return [meta.get("name"), controller, o.get("revision", 0), _age(now, meta.get("creationTimestamp"))]


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
        _age(now, meta.get("creationTimestamp")),
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
        _age(now, last),
        o.get("type"),
        o.get("reason"),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        o.get("message") if "message" in o else o.get("note"),
    ]


def _lease_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    return [meta.get("name"), spec.get("holderIdentity") or "", _age(now, meta.get("creationTimestamp"))]


def _configmap_row(o: dict[str, Any], now: float) -> Row:
    """``printConfigMap``: how many keys, in data and binaryData together."""
    meta = o.get("metadata") or {}
    keys = len(o.get("data") or {}) + len(o.get("binaryData") or {})
    return [meta.get("name"), keys, _age(now, meta.get("creationTimestamp"))]


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
        _age(now, meta.get("creationTimestamp")),
        selector,
    ]


def _cronjob_row(o: dict[str, Any], now: float) -> Row:
    """``printCronJob``: schedule, time zone, suspend, active Jobs, the last schedule's age."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    last = status.get("lastScheduleTime")
    containers = ((((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get(
        "containers"
    ) or []
    selector = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("selector")
    return [
        meta.get("name"),
        spec.get("schedule") or "",
        spec.get("timeZone") or "<none>",
        "True" if spec.get("suspend") else "False",
        len(status.get("active") or []),
        _age(now, last) if last else "<none>",
        _age(now, meta.get("creationTimestamp")),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        format_label_selector(selector) or "<none>",
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
    return [meta.get("name"), shown or "<none>", _age(now, meta.get("creationTimestamp"))]


def _endpointslice_row(o: dict[str, Any], now: float) -> Row:
    """``printEndpointSlice``: address type, ports, up to three addresses, then how many more."""
    meta = o.get("metadata") or {}
    ports = ",".join(str(p.get("port")) for p in o.get("ports") or []) or "<unset>"
    addresses = [a for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
    shown = ",".join(addresses[:3]) + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")
    return [
        meta.get("name"),
        o.get("addressType") or "",
        ports,
        shown or "<unset>",
        _age(now, meta.get("creationTimestamp")),
    ]


def _binding_row(o: dict[str, Any], now: float) -> Row:
    """``printRoleBinding`` / ``printClusterRoleBinding``: Kind/name of the role; subjects when wide."""
    meta, ref = o.get("metadata") or {}, o.get("roleRef") or {}
    users, groups, accounts = [], [], []
    for s in o.get("subjects") or []:
        if s.get("kind") == "ServiceAccount":
            accounts.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
        elif s.get("kind") == "User":
            users.append(str(s.get("name", "")))
        elif s.get("kind") == "Group":
            groups.append(str(s.get("name", "")))
    return [
        meta.get("name"),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _age(now, meta.get("creationTimestamp")),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


def _rc_row(o: dict[str, Any], now: float) -> Row:
    """``printReplicationController``: desired, current and ready replicas."""
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    names, images = _containers_images(o)
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return [
        meta.get("name"),
        int(spec.get("replicas") or 0),
        _n(o, "replicas"),
        _n(o, "readyReplicas"),
        _age(now, meta.get("creationTimestamp")),
        names,
        images,
        selector,
    ]


def _device_taint_row(o: dict[str, Any], now: float) -> Row:
    """``printDeviceTaint``: the taint's key, value, effect and when it was added."""
    meta, taint = o.get("metadata") or {}, (o.get("spec") or {}).get("taint") or {}
    added = taint.get("timeAdded")
    return [
        meta.get("name"),
        taint.get("key") or "",
        taint.get("value") or "",
        taint.get("effect") or "",
        _age(now, added) if added else "",
        _age(now, meta.get("creationTimestamp")),
    ]


def _hpa_row(o: dict[str, Any], now: float) -> Row:
    """``printHorizontalPodAutoscaler``: the target, ``formatHPAMetrics`` (Resource metrics), min,
    max and current replicas."""
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    current = status.get("currentMetrics") or []
    shown = []
    for i, m in enumerate(spec.get("metrics") or []):
        if m.get("type") != "Resource":
            shown.append("<unknown type>")
            continue
        res = m.get("resource") or {}
        now_metric = ((current[i].get("resource") or {}).get("current") or {}) if i < len(current) else {}
        target = res.get("target") or {}
        if target.get("averageValue") is not None:
            shown.append(f"{res.get('name')}: {now_metric.get('averageValue', '<unknown>')}/{target['averageValue']}")
        else:
            have = f"{now_metric['averageUtilization']}%" if "averageUtilization" in now_metric else "<unknown>"
            goal = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
            shown.append(f"{res.get('name')}: {have}/{goal}")
    metrics = ", ".join(shown[:4]) + (f" + {len(shown) - 4} more..." if len(shown) > 4 else "")
    low = spec.get("minReplicas")
    return [
        meta.get("name"),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        metrics or "<none>",
        str(low) if low is not None else "<unset>",
        int(spec.get("maxReplicas") or 0),
        int(status.get("currentReplicas") or 0),
        _age(now, meta.get("creationTimestamp")),
    ]


def _secret_row(o: dict[str, Any], now: float) -> Row:
    """``printSecret``: its type and how many keys."""
    meta = o.get("metadata") or {}
    return [meta.get("name"), o.get("type") or "", len(o.get("data") or {}), _age(now, meta.get("creationTimestamp"))]


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
    return [meta.get("name"), ", ".join(requests), ", ".join(limits), _age(now, meta.get("creationTimestamp"))]


def _serviceaccount_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), len(o.get("secrets") or []), _age(now, meta.get("creationTimestamp"))]


def _runtimeclass_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), o.get("handler") or "", _age(now, meta.get("creationTimestamp"))]


def _name_age_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), _age(now, meta.get("creationTimestamp"))]


def _podgroup_row(o: dict[str, Any], now: float) -> Row:
    """``printPodGroup``: the policy, the Workload it belongs to, and Pending, Scheduled or
    Unschedulable by its PodGroupInitiallyScheduled condition (a DisruptionTarget's reason wins)."""
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    policy = "Gang" if (spec.get("schedulingPolicy") or {}).get("gang") is not None else "Basic"
    conditions = {c.get("type"): c for c in (o.get("status") or {}).get("conditions") or []}
    status = "Pending"
    if "PodGroupInitiallyScheduled" in conditions:
        status = "Scheduled" if conditions["PodGroupInitiallyScheduled"].get("status") == "True" else "Unschedulable"
    if "DisruptionTarget" in conditions:
        status = conditions["DisruptionTarget"].get("reason") or ""
    workload = (spec.get("workloadRef") or {}).get("workloadName") or "<none>"
    return [meta.get("name"), policy, workload, status, _age(now, meta.get("creationTimestamp"))]


def _pc_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [
        meta.get("name"),
        o.get("value", 0),
        bool(o.get("globalDefault")),
        _age(now, meta.get("creationTimestamp")),
        o.get("preemptionPolicy") or "PreemptLowerPriority",
    ]


def _claim_state(o: dict[str, Any]) -> str:
    """``resourceClaimState`` (``pkg/printers/internalversion``): deleted, pending, allocated, reserved."""
    meta, status = o.get("metadata") or {}, o.get("status") or {}
    states = ["deleted"] if meta.get("deletionTimestamp") else []
    if not status.get("allocation"):
        if not meta.get("deletionTimestamp"):
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
        elif meta.get("deletionTimestamp"):
            states.append("deallocating")
    return ",".join(states)


def _claim_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), _claim_state(o), _age(now, meta.get("creationTimestamp"))]


def _slice_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    pool = (spec.get("pool") or {}).get("name") or ""
    return [
        meta.get("name"),
        spec.get("nodeName") or "",
        spec.get("driver") or "",
        pool,
        _age(now, meta.get("creationTimestamp")),
    ]


def _pdb_row(o: dict[str, Any], now: float) -> Row:
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    return [
        meta.get("name"),
        str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
        str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
        status.get("disruptionsAllowed", 0),
        _age(now, meta.get("creationTimestamp")),
    ]


def _ns_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [
        meta.get("name"),
        (o.get("status") or {}).get("phase") or "Active",
        _age(now, meta.get("creationTimestamp")),
    ]


_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


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
        _age(now, meta.get("creationTimestamp")),
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
        _age(now, meta.get("creationTimestamp")),
        spec.get("volumeMode") or "Filesystem",
    ]


def _sc_row(o: dict[str, Any], now: float) -> Row:
    """``printStorageClass``: the default class's name says so."""
    meta = o.get("metadata") or {}
    name = str(meta.get("name"))
    if any((meta.get("annotations") or {}).get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    return [
        name,
        o.get("provisioner") or "",
        o.get("reclaimPolicy") or "Delete",
        o.get("volumeBindingMode") or "Immediate",
        bool(o.get("allowVolumeExpansion")),
        _age(now, meta.get("creationTimestamp")),
    ]


def _csinode_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), len((o.get("spec") or {}).get("drivers") or []), _age(now, meta.get("creationTimestamp"))]


def _csidriver_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    requests = spec.get("tokenRequests") or []
    return [
        meta.get("name"),
        spec.get("attachRequired", True),
        spec.get("podInfoOnMount", False),
        spec.get("storageCapacity", False),
        ",".join(str(r.get("audience", "")) for r in requests) if requests else "<unset>",
        spec.get("requiresRepublish", False),
        ",".join(spec.get("volumeLifecycleModes") or ["Persistent"]),
        _age(now, meta.get("creationTimestamp")),
    ]


def _capacity_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [
        meta.get("name"),
        o.get("storageClassName") or "",
        str(o.get("capacity") or ""),
        _age(now, meta.get("creationTimestamp")),
    ]


def _attachment_row(o: dict[str, Any], now: float) -> Row:
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    return [
        meta.get("name"),
        spec.get("attacher") or "",
        (spec.get("source") or {}).get("persistentVolumeName") or "",
        spec.get("nodeName") or "",
        bool(status.get("attached")),
        _age(now, meta.get("creationTimestamp")),
    ]


def _default_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), meta.get("creationTimestamp")]


PRINTERS: dict[str, tuple[list[dict[str, Any]], Callable[[dict[str, Any], float], Row]]] = {
    "PodTemplate": (
        [_name_col(), _col("Containers"), _col("Images"), _col("Pod Labels")],
        _pod_template_row,
    ),
    "Ingress": (
        [_name_col(), _col("Class"), _col("Hosts"), _col("Address"), _col("Ports"), _col("Age")],
        _ingress_row,
    ),
    "IngressClass": ([_name_col(), _col("Controller"), _col("Parameters"), _col("Age")], _ingress_class_row),
    "NetworkPolicy": (
        [_name_col(), _col("Pod-Selector"), _col("Age")],
        lambda o, now: [
            (o.get("metadata") or {}).get("name"),
            format_label_selector((o.get("spec") or {}).get("podSelector") or {}) or "<none>",
            _age(now, (o.get("metadata") or {}).get("creationTimestamp")),
        ],
    ),
    "VolumeAttributesClass": (
        [_name_col(), _col("DriverName"), _col("Age")],
        lambda o, now: [
            (o.get("metadata") or {}).get("name"),
            o.get("driverName", ""),
            _age(now, (o.get("metadata") or {}).get("creationTimestamp")),
        ],
    ),
    "Pod": (
        [
            _name_col(),
            _col("Ready"),
            _col("Status"),
            _col("Restarts", type_="integer"),
            _col("Age"),
            _col("IP", 1),
            _col("Node", 1),
            _col("Nominated Node", 1),
            _col("Readiness Gates", 1),
        ],
        _pod_row,
    ),
    "Node": (
        [
            _name_col(),
            _col("Status"),
            _col("Roles"),
            _col("Age"),
            _col("Version"),
            _col("Internal-IP", 1),
            _col("External-IP", 1),
            _col("OS-Image", 1),
            _col("Kernel-Version", 1),
            _col("Container-Runtime", 1),
        ],
        _node_row,
    ),
    "Deployment": (
        [
            _name_col(),
            _col("Ready"),
            _col("Up-to-date", type_="integer"),
            _col("Available", type_="integer"),
            _col("Age"),
            _col("Containers", 1),
            _col("Images", 1),
            _col("Selector", 1),
        ],
        _deployment_row,
    ),
    "ReplicaSet": (
        [
            _name_col(),
            _col("Desired", type_="integer"),
            _col("Current", type_="integer"),
            _col("Ready", type_="integer"),
            _col("Age"),
            _col("Containers", 1),
            _col("Images", 1),
            _col("Selector", 1),
        ],
        _replicaset_row,
    ),
    "StatefulSet": (
        [_name_col(), _col("Ready"), _col("Age"), _col("Containers", 1), _col("Images", 1)],
        _statefulset_row,
    ),
    "DaemonSet": (
        [
            _name_col(),
            _col("Desired", type_="integer"),
            _col("Current", type_="integer"),
            _col("Ready", type_="integer"),
            _col("Up-to-date", type_="integer"),
            _col("Available", type_="integer"),
            _col("Node Selector"),
            _col("Age"),
            _col("Containers", 1),
            _col("Images", 1),
            _col("Selector", 1),
        ],
        _daemonset_row,
    ),
    "Job": (
        [
            _name_col(),
            _col("Status"),
            _col("Completions"),
            _col("Duration"),
            _col("Age"),
            _col("Containers", 1),
            _col("Images", 1),
            _col("Selector", 1),
        ],
        _job_row,
    ),
    "ControllerRevision": (
        [_name_col(), _col("Controller"), _col("Revision", type_="integer"), _col("Age")],
        _revision_row,
    ),
    "Event": ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")], _event_row),
    "Lease": ([_name_col(), _col("Holder"), _col("Age")], _lease_row),
    "RuntimeClass": ([_name_col(), _col("Handler"), _col("Age")], _runtimeclass_row),
    "Workload": ([_name_col(), _col("Age")], _name_age_row),
    "PodGroup": ([_name_col(), _col("Policy"), _col("Workload"), _col("Status"), _col("Age")], _podgroup_row),
    # pkg/printers/internalversion/printers.go: Data and Secrets are declared strings, counted
    "ConfigMap": ([_name_col(), _col("Data"), _col("Age")], _configmap_row),
    "ServiceAccount": ([_name_col(), _col("Secrets"), _col("Age")], _serviceaccount_row),
    "Secret": ([_name_col(), _col("Type"), _col("Data"), _col("Age")], _secret_row),
    "HorizontalPodAutoscaler": (
        [
            _name_col(),
            _col("Reference"),
            _col("Targets"),
            _col("MinPods"),
            _col("MaxPods"),
            _col("Replicas"),
            _col("Age"),
        ],
        _hpa_row,
    ),
    # pkg/printers/internalversion/printers.go: the bindings' subjects, replication controllers,
    # DeviceClasses and ResourceClaimTemplates (name and age) and DeviceTaintRules
    **{
        kind: (
            [
                _name_col(),
                _col("Role"),
                _col("Age"),
                _col("Users", priority=1),
                _col("Groups", priority=1),
                _col("ServiceAccounts", priority=1),
            ],
            _binding_row,
        )
        for kind in ("RoleBinding", "ClusterRoleBinding")
    },
    "ReplicationController": (
        [
            _name_col(),
            _col("Desired", type_="integer"),
            _col("Current", type_="integer"),
            _col("Ready", type_="integer"),
            _col("Age"),
            _col("Containers", priority=1),
            _col("Images", priority=1),
            _col("Selector", priority=1),
        ],
        _rc_row,
    ),
    "DeviceClass": ([_name_col(), _col("Age")], _name_age_row),
    "ResourceClaimTemplate": ([_name_col(), _col("Age")], _name_age_row),
    "DeviceTaintRule": (
        [_name_col(), _col("Key"), _col("Value"), _col("Effect"), _col("TimeAdded"), _col("Age")],
        _device_taint_row,
    ),
    "Endpoints": ([_name_col(), _col("Endpoints"), _col("Age")], _endpoints_row),
    "EndpointSlice": (
        [_name_col(), _col("AddressType"), _col("Ports"), _col("Endpoints"), _col("Age")],
        _endpointslice_row,
    ),
    "CronJob": (
        [
            _name_col(),
            _col("Schedule"),
            _col("Timezone"),
            _col("Suspend", type_="boolean"),
            _col("Active", type_="integer"),
            _col("Last Schedule"),
            _col("Age"),
            _col("Containers", priority=1),
            _col("Images", priority=1),
            _col("Selector", priority=1),
        ],
        _cronjob_row,
    ),
    "Service": (
        [
            _name_col(),
            _col("Type"),
            _col("Cluster-IP"),
            _col("External-IP"),
            _col("Port(s)"),
            _col("Age"),
            _col("Selector", priority=1),
        ],
        _service_row,
    ),
    "ResourceQuota": ([_name_col(), _col("Request"), _col("Limit"), _col("Age")], _quota_row),
    "PriorityClass": (
        [
            _name_col(),
            _col("Value", type_="integer"),
            _col("Global-Default", type_="boolean"),
            _col("Age"),
            _col("PreemptionPolicy"),
        ],
        _pc_row,
    ),
    "PodDisruptionBudget": (
        [
            _name_col(),
            _col("Min Available"),
            _col("Max Unavailable"),
            _col("Allowed Disruptions", type_="integer"),
            _col("Age"),
        ],
        _pdb_row,
    ),
    "Namespace": ([_name_col(), _col("Status"), _col("Age")], _ns_row),
    "ResourceClaim": ([_name_col(), _col("State"), _col("Age")], _claim_row),
    "ResourceSlice": ([_name_col(), _col("Node"), _col("Driver"), _col("Pool"), _col("Age")], _slice_row),
    # pkg/printers/internalversion/printers.go
    "PersistentVolume": (
        [
            _name_col(),
            _col("Capacity"),
            _col("Access Modes"),
            _col("Reclaim Policy"),
            _col("Status"),
            _col("Claim"),
            _col("StorageClass"),
            _col("VolumeAttributesClass"),
            _col("Reason"),
            _col("Age"),
            _col("VolumeMode", 1),
        ],
        _pv_row,
    ),
    "PersistentVolumeClaim": (
        [
            _name_col(),
            _col("Status"),
            _col("Volume"),
            _col("Capacity"),
            _col("Access Modes"),
            _col("StorageClass"),
            _col("VolumeAttributesClass"),
            _col("Age"),
            _col("VolumeMode", 1),
        ],
        _pvc_row,
    ),
    "StorageClass": (
        [
            _name_col(),
            _col("Provisioner"),
            _col("ReclaimPolicy"),
            _col("VolumeBindingMode"),
            _col("AllowVolumeExpansion", type_="boolean"),
            _col("Age"),
        ],
        _sc_row,
    ),
    "CSINode": ([_name_col(), _col("Drivers", type_="integer"), _col("Age")], _csinode_row),
    "CSIDriver": (
        [
            _name_col(),
            _col("AttachRequired", type_="boolean"),
            _col("PodInfoOnMount", type_="boolean"),
            _col("StorageCapacity", type_="boolean"),
            _col("TokenRequests"),
            _col("RequiresRepublish", type_="boolean"),
            _col("Modes"),
            _col("Age"),
        ],
        _csidriver_row,
    ),
    "CSIStorageCapacity": (
        [_name_col(), _col("StorageClassName"), _col("Capacity"), _col("Age")],
        _capacity_row,
    ),
    "VolumeAttachment": (
        [_name_col(), _col("Attacher"), _col("PV"), _col("Node"), _col("Attached", type_="boolean"), _col("Age")],
        _attachment_row,
    ),
}
_DEFAULT = ([_name_col(), _col("Created At", type_="date")], _default_row)


def table(
    kind: str,
    objects: list[dict[str, Any]],
    now: float,
    resource_version: str | None,
    continue_token: str | None = None,
    headers: bool = True,
    include: str | None = None,
    printer: Printer | None = None,
) -> dict[str, Any]:
    """A Table of ``objects``; ``include`` is the request's includeObject: Metadata (the
    default: PartialObjectMetadata), Object (the whole object: what ``kubectl get --sort-by``
    sorts by) or None; ``printer``: the columns and row renderer of a kind not built in (a
    custom resource's printer columns)."""
    columns, render = printer or PRINTERS.get(kind, _DEFAULT)
    meta: dict[str, Any] = {}
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    if continue_token:
        meta["continue"] = continue_token

    def embedded(o: dict[str, Any]) -> dict[str, Any] | None:
        if include == "Object":
            return o
        if include == "None":
            return None
        return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.get("metadata") or {}}

    rows = [{"cells": render(o, now), "object": embedded(o)} for o in objects]
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "rows": rows}
    if headers:
        out["columnDefinitions"] = columns
    else:
        out["columnDefinitions"] = None
    return out
