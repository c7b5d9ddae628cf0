"""The Table columns of apps, batch, autoscaling and policy (Deployments to PodDisruptionBudgets),
as ``pkg/printers/internalversion/printers.go`` prints them."""

from __future__ import annotations

from typing import Any

from kubesched.api.selectors import format_label_selector
from kubesched.apiserver.handlers.printers.common import (
    Printer,
    Row,
    age,
    col,
    containers_images,
    human_duration,
    n,
    name_col,
)
from kubesched.clock import parse_rfc3339


def _selector(o: dict[str, Any]) -> str:
    return format_label_selector((o.get("spec") or {}).get("selector")) or "<none>"


def _deployment_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    names, images = containers_images(o)
    return [
        meta.get("name"),
        f"{n(o, 'readyReplicas')}/{int(spec.get('replicas', 1))}",
        n(o, "updatedReplicas"),
        n(o, "availableReplicas"),
        age(now, meta.get("creationTimestamp")),
        names,
        images,
        _selector(o),
    ]


def _replicaset_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    names, images = containers_images(o)
    return [
        meta.get("name"),
        int(spec.get("replicas", 1)),
        n(o, "replicas"),
        n(o, "readyReplicas"),
        age(now, meta.get("creationTimestamp")),
        names,
        images,
        _selector(o),
    ]


def _statefulset_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    names, images = containers_images(o)
    return [
        meta.get("name"),
        f"{n(o, 'readyReplicas')}/{int(spec.get('replicas', 1))}",
        age(now, meta.get("creationTimestamp")),
        names,
        images,
    ]


def _daemonset_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    names, images = containers_images(o)
    selector = ((((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector")) or {}
    return [
        meta.get("name"),
        n(o, "desiredNumberScheduled"),
        n(o, "currentNumberScheduled"),
        n(o, "numberReady"),
        n(o, "updatedNumberScheduled"),
        n(o, "numberAvailable"),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
        age(now, meta.get("creationTimestamp")),
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
    names, images = containers_images(o)
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
        age(now, meta.get("creationTimestamp")),
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
    return [meta.get("name"), controller, o.get("revision", 0), age(now, meta.get("creationTimestamp"))]


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
        age(now, last) if last else "<none>",
        age(now, meta.get("creationTimestamp")),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        format_label_selector(selector) or "<none>",
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
        age(now, meta.get("creationTimestamp")),
    ]


def _pdb_row(o: dict[str, Any], now: float) -> Row:
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    return [
        meta.get("name"),
        str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
        str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
        status.get("disruptionsAllowed", 0),
        age(now, meta.get("creationTimestamp")),
    ]


PRINTERS: dict[str, Printer] = {
    "Deployment": (
        [
            name_col(),
            col("Ready"),
            col("Up-to-date", type_="integer"),
            col("Available", type_="integer"),
            col("Age"),
            col("Containers", 1),
            col("Images", 1),
            col("Selector", 1),
        ],
        _deployment_row,
    ),
    "ReplicaSet": (
        [
            name_col(),
            col("Desired", type_="integer"),
            col("Current", type_="integer"),
            col("Ready", type_="integer"),
            col("Age"),
            col("Containers", 1),
            col("Images", 1),
            col("Selector", 1),
        ],
        _replicaset_row,
    ),
    "StatefulSet": (
        [name_col(), col("Ready"), col("Age"), col("Containers", 1), col("Images", 1)],
        _statefulset_row,
    ),
    "DaemonSet": (
        [
            name_col(),
            col("Desired", type_="integer"),
            col("Current", type_="integer"),
            col("Ready", type_="integer"),
            col("Up-to-date", type_="integer"),
            col("Available", type_="integer"),
            col("Node Selector"),
            col("Age"),
            col("Containers", 1),
            col("Images", 1),
            col("Selector", 1),
        ],
        _daemonset_row,
    ),
    "Job": (
        [
            name_col(),
            col("Status"),
            col("Completions"),
            col("Duration"),
            col("Age"),
            col("Containers", 1),
            col("Images", 1),
            col("Selector", 1),
        ],
        _job_row,
    ),
    "ControllerRevision": (
        [name_col(), col("Controller"), col("Revision", type_="integer"), col("Age")],
        _revision_row,
    ),
    "HorizontalPodAutoscaler": (
        [
            name_col(),
            col("Reference"),
            col("Targets"),
            col("MinPods"),
            col("MaxPods"),
            col("Replicas"),
            col("Age"),
        ],
        _hpa_row,
    ),
    "CronJob": (
        [
            name_col(),
            col("Schedule"),
            col("Timezone"),
            col("Suspend", type_="boolean"),
            col("Active", type_="integer"),
            col("Last Schedule"),
            col("Age"),
            col("Containers", priority=1),
            col("Images", priority=1),
            col("Selector", priority=1),
        ],
        _cronjob_row,
    ),
    "PodDisruptionBudget": (
        [
            name_col(),
            col("Min Available"),
            col("Max Unavailable"),
            col("Allowed Disruptions", type_="integer"),
            col("Age"),
        ],
        _pdb_row,
    ),
}
