"""kubesched's scheduler against kube-scheduler v1.37.2's, like for like: each scheduler alone in a
process of its own, on the same workload file, timed over the same window, on the same machine.

    python benchmarks/like_for_like.py [--only ROW ...] [--repeat 3] > like_for_like.md
    python benchmarks/like_for_like.py --update docs/benchmarks.md   # the docs' table, between its markers
    python benchmarks/like_for_like.py --only gang-preempt-100 gang-preempt-300   # some rows, printed
    python benchmarks/like_for_like.py --side kubesched|upstream WORKLOAD.json   # one run, as JSON

What each side does with a workload file (its ``objects``: nodes, the pods already bound to them and
what the pods refer to, such as ResourceClaims or PodGroups; its ``measured``: the pending pods; its
``feature_gates``: kube-scheduler's, the same on both sides):

- upstream: ``schedperf`` (upstream/cmd/schedperf, built by ``scripts/build_upstream.sh``) puts
  everything in client-go's fake API, builds upstream's scheduler with ``scheduler.New`` (default
  profile, events to the fake API), waits until its informers have handed every object to it
  (every measured pod in activeQ), then opens the window and runs ``Scheduler.Run``;
- kubesched: the embedded cluster as ``scheduler_perf.py`` builds it creates the objects, its
  scheduler lists and watches them, the measured pods are created and handed to it (every one in
  activeQ), then the window opens and the virtual-time driver runs to quiescence.

The window closes when the last measured pod is bound; each side reports the window's wall seconds
and its process's CPU seconds in it (every thread: the scheduler's, and the in-memory API's that
stand in for the network on both sides). Runs alternate between the sides, each in a new process;
the median of ``--repeat`` runs is shown. The measured pods are created before the window on both
sides; init pods are bound in the file (round robin), not scheduled, so both start from the same
placements. Mixed rows interleave several pod templates, so that a cache of identical pods' answers
(kubesched's shape cache) does not decide the figure.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler_perf import ZONE, node, node_affinity_pod, pod, spreading_pod
from table import machine, replace_between_markers

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ZONES = ("zone1", "zone2", "zone3", "zone4")
MARKER = "benchmarks/like_for_like.py"


def _big(n: dict[str, Any], factor: int) -> dict[str, Any]:
    """A node ``factor`` times the template's (4 CPU, 32Gi, 110 pods), so that a small cluster
    holds a window's worth of pods."""
    if factor > 1:
        for field in ("capacity", "allocatable"):
            n["status"][field] = {"pods": str(110 * factor), "cpu": str(4 * factor), "memory": f"{32 * factor}Gi"}
    return n


def anti_affinity_pod(prefix: str, i: int) -> dict[str, Any]:
    """100m, labelled by one of 8 apps, preferring nodes without a pod of its app (weight 1)."""
    p = pod(prefix, i)
    app = f"app-{i % 8}"
    p["metadata"]["labels"] = {"app": app}
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    p["spec"]["affinity"] = {
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]}
    }
    return p


def spread_pod(prefix: str, i: int) -> dict[str, Any]:
    """``pod-with-preferred-topology-spreading.yaml``: color=blue, zone maxSkew 5, ScheduleAnyway."""
    p = spreading_pod(i, "ScheduleAnyway")
    p["metadata"]["name"] = f"{prefix}-{i}"
    return p


def larger_pod(prefix: str, i: int) -> dict[str, Any]:
    """250m / 1Gi, on nodes with the zone label zone1..zone4 (a nodeSelector)."""
    p = pod(prefix, i, cpu="250m")
    for c in p["spec"]["containers"]:
        c["resources"] = {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"cpu": "250m", "memory": "1Gi"}}
    p["spec"]["nodeSelector"] = {ZONE: ZONES[i % len(ZONES)]}
    return p


# the mixed rows' templates, interleaved pod by pod
MIXED: tuple[Callable[[str, int], dict[str, Any]], ...] = (
    pod,
    node_affinity_pod,
    spread_pod,
    anti_affinity_pod,
    larger_pod,
)


# the Alibaba GPU trace of the FGD paper (USENIX ATC'23), beside the checkout; research and study
# use with attribution (its README in that folder), never copied into the repository
TRACE = ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023"


def _whole_node(pod: dict[str, Any]) -> bool:
    """A pod of more than 64 CPUs: only the trace's largest nodes hold it, and none does once the
    other pods are spread over them, so it would stay pending on both sides."""
    cpu = pod["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    return int(cpu.rstrip("m")) > 64000


def trace_workload(measured: int) -> dict[str, Any]:
    """The trace's 1,523 nodes and the first ``measured`` pods of its 50 %-CPU pod list but those of
    a whole node's size (``_whole_node``), as
    ``kubesched replay`` reads them (GPUs in annotations, which the default profile does not read:
    to both schedulers these are pods of the trace's 96 cpu/memory shapes)."""
    from kubesched.replay.trace import load_nodes_csv, load_pods_csv

    nodes = load_nodes_csv(TRACE / "openb_node_list_all_node.csv")
    pods = [a.pod for a in load_pods_csv(TRACE / "openb_pod_list_cpu050.csv") if not _whole_node(a.pod)][:measured]
    namespaces = sorted({p["metadata"]["namespace"] for p in pods})
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]
    return {"objects": objects + nodes, "measured": pods}


def dra_workload(nodes: int, measured: int) -> dict[str, Any]:
    """scheduler_perf's SchedulingWithResourceClaimTemplate shapes (``scheduler_perf_dra.py``):
    nodes with ten GPU-like devices each in a ResourceSlice, the DeviceClass selecting their
    driver, and pods with one claim for a device of it. The claims are created with the pods, one
    each, as the resourceclaim controller would make them from the template (neither side runs
    controllers); both schedulers' DynamicResources plugins allocate them."""
    import scheduler_perf_dra as dra

    objects: list[dict[str, Any]] = [dra.device_class()]
    slices = dra.basic_slices(10)
    for i in range(nodes):
        objects.append(dra.node(i))
        objects.extend(slices(i))
    pods = []
    for i in range(measured):
        # the claim as kube-apiserver's defaulting leaves it (the fake API of the upstream side defaults
        # nothing for resource.k8s.io)
        objects.append(dra.claim("default", i, dra.claim_spec(allocationMode="ExactCount", count=1)))
        p = dra.pod("default", i)
        p["spec"]["resourceClaims"] = [{"name": "resource", "resourceClaimName": f"test-claim-{i}"}]
        pods.append(p)
    return {"objects": objects, "measured": pods}


GANG = 3  # pods a PodGroup (a gang of minCount 3)


def gang_workload(nodes: int, measured: int) -> dict[str, Any]:
    """scheduler_perf's GangScheduling shapes (podgroup/gangscheduling): PodGroups of three pods, a
    gang of minCount three, each created before its pods (``templates/gang-pod.yaml``: 100m), with
    GenericWorkload on (beta, off by default in v1.37) on both sides."""
    objects: list[dict[str, Any]] = [node(i, len(ZONES), ZONES) for i in range(nodes)]
    for g in range(-(-measured // GANG)):
        objects.append(
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": f"gang-{g}", "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": GANG}}},
            }
        )
    pods = []
    for i in range(measured):
        p = pod("measured", i)
        p["spec"]["schedulingGroup"] = {"podGroupName": f"gang-{i // GANG}"}
        pods.append(p)
    return {"objects": objects, "measured": pods, "feature_gates": "GenericWorkload=true"}


PREEMPTING_GANG = 10  # pods a preempting gang (scheduler_perf's 100Nodes_10PreemptorGangs_10Pods)


def gang_preemption_workload(nodes: int, init: int, measured: int) -> dict[str, Any]:
    """scheduler_perf's GangPreemptionBasic shapes (workload_preemption): ``init`` low-priority
    40m pods bound evenly (priority 0, no grace period), then gangs of ten 3970m pods of the
    ``gang`` class (8888888), each of which fits a node only by preempting that node's low pods:
    every measured pod preempts. The pods and PodGroups name the class, as kube-apiserver's
    admission wants them (it refuses a pod that gives its own priority); schedperf gives them its
    value as that admission would, the fake API admitting nothing. GenericWorkload on both sides."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "gang"}, "value": 8888888}
    ]
    objects += [node(i, len(ZONES), ZONES) for i in range(nodes)]
    for i in range(init):
        p = pod("low", i, cpu="40m", grace=0)
        p["spec"]["nodeName"] = f"node-{i % nodes}"
        objects.append(p)
    for g in range(-(-measured // PREEMPTING_GANG)):
        spec = {"priorityClassName": "gang", "schedulingPolicy": {"gang": {"minCount": PREEMPTING_GANG}}}
        meta = {"name": f"gang-{g}", "namespace": "default"}
        objects.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec})
    pods = []
    for i in range(measured):
        p = pod("measured", i, cpu="3970m", priority_class="gang", grace=0)
        p["spec"]["schedulingGroup"] = {"podGroupName": f"gang-{i // PREEMPTING_GANG}"}
        pods.append(p)
    return {"objects": objects, "measured": pods, "feature_gates": "GenericWorkload=true"}


def workload(shape: str, nodes: int, init: int, measured: int, factor: int = 1) -> dict[str, Any]:
    """The workload file's content: ``nodes`` nodes (zones zone1..zone4), ``init`` pods bound round
    robin, ``measured`` pending pods, of the basic template or the mixed ones; or the trace's, or
    the DRA rows'."""
    if shape == "trace":
        return trace_workload(measured)
    if shape == "dra":
        return dra_workload(nodes, measured)
    if shape == "gang":
        return gang_workload(nodes, measured)
    if shape == "gangpreempt":
        return gang_preemption_workload(nodes, init, measured)
    templates = (pod,) if shape == "basic" else MIXED
    objects: list[dict[str, Any]] = [_big(node(i, len(ZONES), ZONES), factor) for i in range(nodes)]
    for i in range(init):
        p = templates[i % len(templates)]("init", i)
        p["spec"]["nodeName"] = f"node-{i % nodes}"
        objects.append(p)
    return {"objects": objects, "measured": [templates[i % len(templates)]("measured", i) for i in range(measured)]}


@dataclass(frozen=True)
class Row:
    name: str
    shape: str
    nodes: int
    init: int
    measured: int
    factor: int = 1  # node size, times the template's


ROWS = (
    Row("basic-10", "basic", 10, 20, 10000, factor=32),
    Row("basic-100", "basic", 100, 100, 10000, factor=4),
    Row("basic-500", "basic", 500, 100, 10000),
    Row("basic-5000", "basic", 5000, 1000, 10000),
    Row("basic-15000", "basic", 15000, 1000, 10000),
    Row("mixed-10", "mixed", 10, 20, 10000, factor=64),
    Row("mixed-100", "mixed", 100, 100, 10000, factor=8),
    Row("mixed-500", "mixed", 500, 100, 10000),
    Row("mixed-5000", "mixed", 5000, 1000, 10000),
    Row("fgd-trace", "trace", 1523, 0, 7398),
    Row("dra-500", "dra", 500, 0, 2500),
    Row("gang-500", "gang", 500, 0, 9000),
    # scheduler_perf's GangPreemptionBasic 100Nodes_10PreemptorGangs_10Pods_Evicting_1000InitPods, and
    # three times it: every measured pod preempts, each gang's preemption weighing every lower pod of
    # the cluster, so these windows are short (upstream takes over 5 s a gang at 1,000 nodes)
    Row("gang-preempt-100", "gangpreempt", 100, 1000, 100),
    Row("gang-preempt-300", "gangpreempt", 300, 3000, 300),
)


def kubesched_side(path: Path) -> dict[str, Any]:
    """One run of kubesched's side (see the module's docstring)."""
    from kubesched.app import gc_settings
    from kubesched.features import FeatureGates
    from scheduler_perf import default_config, embedded_cluster

    gc_settings.tune()  # as the kubesched command does before running anything
    w = json.loads(path.read_text())
    config = default_config()
    if w.get("feature_gates"):
        config.feature_gates = FeatureGates.parse(w["feature_gates"])
    cluster = embedded_cluster(config)
    store, sched = cluster.store, cluster.sched
    for obj in w["objects"]:
        store.create(obj["kind"], obj)
    cluster.start()
    cluster.run_to_quiescence()
    for p in w["measured"]:
        store.create("Pod", p)
    sched.process_events()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    cluster.run_to_quiescence()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    bound = 0
    for p in w["measured"]:
        got = store.try_get("Pod", p["metadata"].get("namespace", "default"), p["metadata"]["name"])
        bound += bool(got and got["spec"].get("nodeName"))
    return _report(len(w["measured"]), bound, wall, cpu)


def _report(pods: int, bound: int, wall: float, cpu: float) -> dict[str, Any]:
    return {
        "pods": pods,
        "bound": bound,
        "seconds": wall,
        "cpu_seconds": cpu,
        "pods_per_second": bound / wall if bound else 0.0,
        "cpu_ms_per_pod": 1000 * cpu / bound if bound else 0.0,
    }


def schedperf() -> Path:
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_upstream.sh")], check=True, capture_output=True, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1]) / "schedperf"


def one_run(side: str, path: Path, binary: Path | None) -> dict[str, Any]:
    """A run of one side in a new process."""
    if side == "upstream":
        assert binary is not None
        gates = json.loads(path.read_text()).get("feature_gates")
        cmd = [str(binary), *([f"--feature-gates={gates}"] if gates else []), str(path)]
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--side", "kubesched", str(path)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(rows: list[Row], repeat: int) -> list[dict[str, Any]]:
    binary = schedperf()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            path = Path(tmp) / f"{row.name}.json"
            path.write_text(json.dumps(workload(row.shape, row.nodes, row.init, row.measured, row.factor)))
            runs: dict[str, list[dict[str, Any]]] = {"upstream": [], "kubesched": []}
            for i in range(repeat):
                for side in ("upstream", "kubesched") if i % 2 == 0 else ("kubesched", "upstream"):
                    r = one_run(side, path, binary)
                    runs[side].append(r)
                    print(
                        f"{row.name} {side}: {r['pods_per_second']:.0f} pods/s, "
                        f"{r['cpu_ms_per_pod']:.3f} ms CPU/pod, bound {r['bound']}/{r['pods']}",
                        file=sys.stderr,
                    )
            results.append({"row": row, "runs": runs})
    return results


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def table(results: list[dict[str, Any]], repeat: int) -> str:
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {machine()}; kube-scheduler v1.37.2's scheduler "
        f"(upstream/cmd/schedperf) against kubesched's, median of {repeat} alternating runs a side, each in a "
        "process of its own.",
        "",
        "| row | nodes | pods measured (after bound) | kube-scheduler pods/s | kubesched pods/s | "
        "kube-scheduler CPU ms/pod | kubesched CPU ms/pod | CPU ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for res in results:
        row, runs = res["row"], res["runs"]
        up_cpu, ks_cpu = _median(runs["upstream"], "cpu_ms_per_pod"), _median(runs["kubesched"], "cpu_ms_per_pod")
        up_rate, ks_rate = _median(runs["upstream"], "pods_per_second"), _median(runs["kubesched"], "pods_per_second")
        lines.append(
            f"| {row.name} | {row.nodes:,} | {row.measured:,} ({row.init:,}) | {up_rate:,.0f} | {ks_rate:,.0f} | "
            f"{up_cpu:.3f} | {ks_cpu:.3f} | {up_cpu / ks_cpu:.1f}x |"
        )
    return "\n".join(lines)


def headline(table_text: str) -> str:
    """The README's sentence, from the table: on how many rows kubesched is ahead, by how much."""
    cells = [[c.strip().replace(",", "") for c in line.strip("|").split("|")] for line in table_text.splitlines()]
    rows = [c for c in cells if len(c) == 8 and c[1].isdigit()]
    cpu = [float(c[5]) / float(c[6]) for c in rows]
    rate = [float(c[4]) / float(c[3]) for c in rows]
    ahead = sum(1 for c, p in zip(cpu, rate, strict=True) if c > 1 and p > 1)
    sizes = sorted(int(c[1]) for c in rows)
    names = {c[0].rsplit("-", 1)[0] for c in rows}
    labels = {
        "basic": "basic",
        "mixed": "mixed",
        "fgd": "the FGD trace's",
        "dra": "DRA",
        "gang": "gang",
        "gang-preempt": "preempting gang",
    }
    shown = [label for key, label in labels.items() if key in names]
    kinds = (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else "".join(shown)) + " pods"
    return (
        f"Like for like, kube-scheduler v1.37.2's scheduler and kubesched's each alone on the same workload, "
        f"timed over the same window ([how](docs/benchmarks.md#like-for-like-the-scheduler-alone)): kubesched "
        f"ahead on {ahead} of {len(rows)} rows from {sizes[0]:,} to {sizes[-1]:,} nodes, {kinds}, "
        f"{min(cpu):.1f}× to {max(cpu):.1f}× less CPU per pod and {min(rate):.1f}× to {max(rate):.1f}× the pods/s."
    )


# the rows the README shows (every row is in docs/benchmarks.md), and always the lowest CPU ratio
README_ROWS = ("basic-10", "basic-15000", "mixed-10", "mixed-5000")


def readme_block(table_text: str) -> str:
    """The README's form of the table: the headline, then the header and the chosen rows."""
    lines = [line for line in table_text.splitlines() if line.startswith("|")]
    rows = lines[2:]
    ratios = {r.split("|")[1].strip(): float(r.split("|")[8].strip().rstrip("x")) for r in rows}
    lowest = min(ratios, key=ratios.__getitem__) if ratios else ""
    kept = [r for r in rows if r.split("|")[1].strip() in (*README_ROWS, lowest)]
    return "\n".join([headline(table_text), "", *lines[:2], *kept])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--side", choices=("kubesched", "upstream"))
    parser.add_argument("workload", nargs="?", type=Path)
    parser.add_argument("--only", nargs="*", help="rows by name: " + ", ".join(r.name for r in ROWS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--update", type=Path, help="write the table into this file, between its markers")
    args = parser.parse_args()
    if args.side is not None:
        if args.workload is None:
            parser.error("--side needs a workload file")
        r = (
            kubesched_side(args.workload)
            if args.side == "kubesched"
            else one_run("upstream", args.workload, schedperf())
        )
        print(json.dumps(r))
        return
    rows = [r for r in ROWS if not args.only or r.name in args.only]
    if not TRACE.is_dir():
        print(f"like_for_like: no trace at {TRACE}: the fgd-trace row is left out", file=sys.stderr)
        rows = [r for r in rows if r.shape != "trace"]
    if not rows:
        parser.error(f"no row named {args.only}")
    out = table(compare(rows, args.repeat), args.repeat)
    print(out)
    if args.update is not None and args.only:  # a table of its own, between markers naming its rows
        replace_between_markers(args.update, out + "\n", f"{MARKER} --only {' '.join(args.only)}")
    elif args.update is not None:
        replace_between_markers(args.update, out + "\n", MARKER)
        replace_between_markers(ROOT / "README.md", readme_block(out) + "\n", MARKER)


if __name__ == "__main__":
    main()
