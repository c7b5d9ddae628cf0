"""Every scheduler_perf workload in one run, printed as docs/benchmarks.md's table.

    python benchmarks/table.py [--only NAME ...] > table.md
    python benchmarks/table.py --update docs/benchmarks.md   # the docs' table, between its markers

Each row runs ``scheduler_perf.py`` (or ``scheduler_perf_dra.py``) in its own process, in
upstream's shapes and sizes, and reports pods/s, the multiple of upstream's CI floor (its
``misc/performance-config.yaml`` and sibling files' ``threshold``), the same-run ratio to the bare
per-node port where the workload has one (SchedulingBasic), and the process's peak RSS. Progress
goes to stderr; the table (with the date and the machine) to stdout.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Row:
    workload: str
    nodes: str  # as shown
    measured: str  # as shown
    args: tuple[str, ...]
    floor: int | None = None
    script: str = "scheduler_perf.py"
    upstream: str | None = None  # "TestCase/workload" of upstream's performance-config whose threshold is the floor


ROWS = [
    # small clusters: every pod fits (40 pods of 100m on a 4-CPU node), so the rate is of placements
    Row(
        "SchedulingBasic",
        "10",
        "350 (after 40)",
        ("SchedulingBasic", "--nodes", "10", "--pods", "350", "--init-pods", "40"),
    ),
    Row(
        "SchedulingBasic",
        "100",
        "2,000 (after 100)",
        ("SchedulingBasic", "--nodes", "100", "--pods", "2000", "--init-pods", "100"),
    ),
    Row("SchedulingBasic", "500", "1,000", ("SchedulingBasic", "--nodes", "500", "--pods", "1000")),
    Row("SchedulingBasic", "1,000", "5,000", ("SchedulingBasic", "--nodes", "1000", "--pods", "5000")),
    Row(
        "SchedulingBasic",
        "5,000",
        "10,000 (after 1,000)",
        ("SchedulingBasic",),
        680,
        upstream="SchedulingBasic/5000Nodes_10000Pods",
    ),
    Row("SchedulingBasic", "5,000", "30,000 (after 1,000)", ("SchedulingBasic", "--pods", "30000")),
    Row(
        "SchedulingBasic",
        "5,000",
        "50,000 (after 5,000)",
        ("SchedulingBasic", "--pods", "50000", "--init-pods", "5000"),
        790,
        upstream="SchedulingBasic/5000Nodes_50000Pods",
    ),
    Row(
        "SchedulingBasicWithExtender",
        "5,000",
        "5,000 (after 1,000)",
        ("SchedulingBasicWithExtender", "--pods", "5000"),
    ),
    Row(
        "PreemptionBasic",
        "1,000",
        "1,000 preemptors (after 4,000 low)",
        ("PreemptionBasic", "--nodes", "1000", "--pods", "1000"),
    ),
    Row(
        "PreemptionAsync",
        "5,000",
        "5,000 (after 20,000 low; a preemptor every 200 ms)",
        ("PreemptionAsync", "--pods", "5000"),
        570,
        upstream="PreemptionAsync/5000Nodes",
    ),
    Row(
        "TopologySpreading",
        "5,000 (3 zones)",
        "5,000 (after 5,000)",
        ("TopologySpreading", "--pods", "5000"),
        460,
        upstream="TopologySpreading/5000Nodes_5000Pods",
    ),
    Row(
        "PreferredTopologySpreading",
        "5,000 (3 zones)",
        "5,000 (after 5,000)",
        ("PreferredTopologySpreading", "--pods", "5000"),
        340,
        upstream="PreferredTopologySpreading/5000Nodes_5000Pods",
    ),
    Row(
        "SchedulingPodAntiAffinity",
        "5,000",
        "2,000 (after 1,000)",
        ("SchedulingPodAntiAffinity", "--pods", "2000", "--init-pods", "1000"),
        180,
        upstream="SchedulingPodAntiAffinity/5000Nodes_2000Pods",
    ),
    Row(
        "SchedulingPodAffinity",
        "5,000 (1 zone)",
        "5,000 (after 5,000)",
        ("SchedulingPodAffinity", "--pods", "5000"),
        70,
        upstream="SchedulingPodAffinity/5000Nodes_5000Pods",
    ),
    Row(
        "SchedulingPreferredPodAffinity",
        "5,000",
        "5,000 (after 5,000)",
        ("SchedulingPreferredPodAffinity", "--pods", "5000"),
        160,
        upstream="SchedulingPreferredPodAffinity/5000Nodes_5000Pods",
    ),
    Row(
        "SchedulingPreferredPodAntiAffinity",
        "5,000",
        "5,000 (after 5,000)",
        ("SchedulingPreferredPodAntiAffinity", "--pods", "5000"),
        190,
        upstream="SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods",
    ),
    Row(
        "DefaultTopologySpreading",
        "5,000 (3 zones)",
        "50,000 (after 5,000)",
        ("DefaultTopologySpreading", "--pods", "50000"),
        160,
        upstream="DefaultTopologySpreading/5000Nodes_50000Pods",
    ),
    Row(
        "SchedulingDaemonset",
        "15,000 + the named node",
        "30,000",
        ("SchedulingDaemonset", "--nodes", "15000", "--pods", "30000"),
        1100,
        upstream="SchedulingDaemonset/15000Nodes",
    ),
    Row(
        "Unschedulable",
        "5,000",
        "10,000 (after 100; a 9-CPU pod every 200 ms)",
        ("Unschedulable", "--init-pods", "100"),
        590,
        upstream="Unschedulable/5kNodes/100Init/10kPods",
    ),
    Row(
        "Unschedulable",
        "5,000",
        "10,000 (after 20,000; a 9-CPU pod every 200 ms)",
        ("Unschedulable", "--init-pods", "20000"),
        600,
        upstream="Unschedulable/5kNodes/20kInit/10kPods",
    ),
    Row(
        "SchedulingDeletedPodsWithFinalizers",
        "5,000",
        "5,000 (5,000 finalized pods deleted at 100/s)",
        ("SchedulingDeletedPodsWithFinalizers", "--pods", "5000"),
        830,
        upstream="SchedulingDeletedPodsWithFinalizers/5000Node_5000DeletingPods",
    ),
    Row(
        "SchedulingNodeAffinity",
        "5,000 (zone1)",
        "10,000 (after 5,000)",
        ("SchedulingNodeAffinity", "--pods", "10000"),
        540,
        upstream="SchedulingNodeAffinity/5000Nodes_10000Pods",
    ),
    Row(
        "SchedulingPodMatchingAntiAffinity",
        "5,000",
        "5,000 (after 1,000 anti-affinity pods)",
        ("SchedulingPodMatchingAntiAffinity", "--pods", "5000"),
        540,
        upstream="SchedulingPodMatchingAntiAffinity/5000Nodes_5000Pods",
    ),
    Row(
        "MixedSchedulingBasePod",
        "5,000 (zone1)",
        "5,000 (after 2,000 of each of 5 templates)",
        ("MixedSchedulingBasePod", "--pods", "5000"),
        540,
        upstream="MixedSchedulingBasePod/5000Nodes_5000Pods",
    ),
    Row(
        "SchedulingRequiredPodAntiAffinityWithNSSelector",
        "6,000",
        "2,000 (after 100 namespaces × 40)",
        ("SchedulingRequiredPodAntiAffinityWithNSSelector", "--nodes", "6000", "--pods", "2000"),
        140,
        upstream="SchedulingRequiredPodAntiAffinityWithNSSelector/5000Nodes_2000Pods",
    ),
    Row(
        "SchedulingPreferredAntiAffinityWithNSSelector",
        "5,000",
        "2,000 (after 100 × 40)",
        ("SchedulingPreferredAntiAffinityWithNSSelector", "--pods", "2000"),
        180,
        upstream="SchedulingPreferredAntiAffinityWithNSSelector/5000Nodes_2000Pods",
    ),
    Row(
        "SchedulingRequiredPodAffinityWithNSSelector",
        "5,000 (zone1)",
        "2,000 (after 100 × 50)",
        ("SchedulingRequiredPodAffinityWithNSSelector", "--pods", "2000"),
        180,
        upstream="SchedulingRequiredPodAffinityWithNSSelector/5000Nodes_2000Pods",
    ),
    Row(
        "SchedulingPreferredAffinityWithNSSelector",
        "5,000",
        "5,000 (after 100 × 50)",
        ("SchedulingPreferredAffinityWithNSSelector", "--pods", "5000"),
        190,
        upstream="SchedulingPreferredAffinityWithNSSelector/5000Nodes_5000Pods",
    ),
    Row(
        "SchedulingGatedPodsWithPodAffinityImpactForThroughput",
        "1 (named)",
        "20,000 (10,000 gated with pod affinity waiting)",
        ("SchedulingGatedPodsWithPodAffinityImpactForThroughput", "--nodes", "1", "--pods", "20000"),
        750,
        upstream="SchedulingGatedPodsWithPodAffinityImpactForThroughput/1Node_10000GatedPods",
    ),
    Row(
        "SchedulingWithNodeInclusionPolicy",
        "4,000 + 1,000 tainted",
        "4,000 (one per hostname, taints honoured)",
        ("SchedulingWithNodeInclusionPolicy", "--pods", "4000"),
        270,
        upstream="SchedulingWithNodeInclusionPolicy/5000Nodes",
    ),
    Row(
        "SchedulingWithMixedChurn",
        "5,000 (a node, a 9-CPU pod and a Service recreated every second)",
        "10,000",
        ("SchedulingWithMixedChurn",),
        710,
        upstream="SchedulingWithMixedChurn/5000Nodes_10000Pods",
    ),
    Row(
        "SchedulingWhileGated",
        "1 (90,000 pods)",
        "20,000 (10,000 gated; 20,000 deleted at 50/s)",
        ("SchedulingWhileGated", "--nodes", "1", "--pods", "20000"),
        910,
        upstream="SchedulingWhileGated/1Node_10000GatedPods",
    ),
    Row(
        "SchedulingWithExtendedResource",
        "5,000",
        "5,000 (pod i needs foo.com/bar-i, on node i only)",
        ("SchedulingWithExtendedResource", "--pods", "5000"),
        180,
        upstream="SchedulingWithExtendedResource/5000pods_5000nodes_DRAExtendedResourceEnabled",
    ),
    # volumes/performance-config.yaml: every pod with its own pre-bound claim and volume
    Row(
        "SchedulingInTreePVs",
        "5,000",
        "2,000 (after 1,000; in-tree EBS volumes)",
        ("SchedulingInTreePVs", "--pods", "2000", "--init-pods", "1000"),
        290,
        upstream="SchedulingInTreePVs/5000Nodes_2000Pods",
    ),
    Row(
        "SchedulingMigratedInTreePVs",
        "5,000 (CSINodes, EBS migrated, 39 attachable)",
        "5,000 (after 5,000)",
        ("SchedulingMigratedInTreePVs", "--pods", "5000", "--init-pods", "5000"),
        100,
        upstream="SchedulingMigratedInTreePVs/5000Nodes_5000Pods",
    ),
    Row(
        "SchedulingCSIPVs",
        "5,000 (CSINodes, 39 attachable)",
        "5,000 (after 5,000; CSI volumes)",
        ("SchedulingCSIPVs", "--pods", "5000", "--init-pods", "5000"),
        100,
        upstream="SchedulingCSIPVs/5000Nodes_5000Pods",
    ),
    Row(
        "HostPortConflict (batching)",
        "20,000",
        "20,000 (hostPort 80, one per node)",
        ("HostPortConflict", "--nodes", "20000", "--pods", "20000"),
    ),
    Row(
        "HostPortConflict (no batching)",
        "20,000",
        "20,000",
        ("HostPortConflict", "--nodes", "20000", "--pods", "20000", "--feature-gates", "OpportunisticBatching=false"),
    ),
    Row(
        "ResourceSaturation (batching)",
        "20,000",
        "20,000 (3 CPU on 4-CPU nodes)",
        ("ResourceSaturation", "--nodes", "20000", "--pods", "20000"),
    ),
    # nodedeclaredfeatures/: the registry swapped for N mock features every pod needs
    *(
        Row(
            f"NodeDeclaredFeatures, {n} features",
            "5,000",
            "50,000 (after 5,000)",
            (f"NodeDeclaredFeatures{n}", "--pods", "50000", "--init-pods", "5000"),
            890,
            upstream=f"NodeDeclaredFeaturesEnabled/5000Nodes{n}DeclaredFeatures",
        )
        for n in (20, 40, 100)
    ),
    # podgroup/{gangscheduling,basicscheduling}: upstream sets no floor for them (GenericWorkload is beta)
    Row(
        "GangScheduling",
        "5,000",
        "3,000 (1,000 gangs of 3)",
        ("GangScheduling", "--pods", "3000"),
        upstream="GangScheduling/5000Nodes_1000Gangs_3000Pods",
    ),
    Row(
        "GangScheduling",
        "5,000",
        "9,000 (3,000 gangs of 3)",
        ("GangScheduling", "--pods", "9000"),
        upstream="GangScheduling/5000Nodes_3000Gangs_9000Pods",
    ),
    Row(
        "GangScheduling",
        "5,000",
        "3,000 (3 gangs of 1,000)",
        ("GangScheduling", "--pods", "3000", "--pods-per-group", "1000"),
        upstream="GangScheduling/5000Nodes_3Gangs_3000Pods_1000PerGroup",
    ),
    Row(
        "GangPreemptionBasic",
        "100",
        "100 (1 gang of 100, evicting 1,000 pods)",
        ("GangPreemptionBasic", "--nodes", "100", "--pods", "100", "--init-pods", "1000", "--pods-per-group", "100"),
        upstream="GangPreemptionBasic/100Nodes_1PreemptorGang_100Pods_Evicting_1000InitPods",
    ),
    Row(
        "GangPreemptionBasic",
        "100",
        "100 (10 gangs of 10, evicting 1,000 pods)",
        ("GangPreemptionBasic", "--nodes", "100", "--pods", "100", "--init-pods", "1000", "--pods-per-group", "10"),
        upstream="GangPreemptionBasic/100Nodes_10PreemptorGangs_10Pods_Evicting_1000InitPods",
    ),
    Row(
        "GangPreemptionPodGroups",
        "100",
        "100 (1 gang of 100, evicting 5 gangs of 100)",
        ("GangPreemptionPodGroups", "--nodes", "100", "--pods", "100", "--init-pods", "500", "--pods-per-group", "100"),
        upstream="GangPreemptionPodGroups/100Nodes_1PreemptorGang_100Pods_Evicting_5LowPriorityGangs",
    ),
    Row(
        "GangPreemptionPodGroups",
        "100",
        "100 (10 gangs of 10, evicting 50 gangs of 10)",
        ("GangPreemptionPodGroups", "--nodes", "100", "--pods", "100", "--init-pods", "500", "--pods-per-group", "10"),
        upstream="GangPreemptionPodGroups/100Nodes_10PreemptorGangs_10Pods_Evicting_50LowPriorityGangs",
    ),
    Row(
        "GangPreemptionAffinity",
        "100",
        "100 (1 gang of 100 with pod affinity, evicting 1,000 pods)",
        ("GangPreemptionAffinity", "--nodes", "100", "--pods", "100", "--init-pods", "1000", "--pods-per-group", "100"),
        upstream="GangPreemptionAffinity/100Nodes_1PreemptorGang_100Pods_Evicting_1000InitPods",
    ),
    Row(
        "GangPreemptionAffinity",
        "100",
        "100 (10 gangs of 10 with pod affinity, evicting 1,000 pods)",
        ("GangPreemptionAffinity", "--nodes", "100", "--pods", "100", "--init-pods", "1000", "--pods-per-group", "10"),
        upstream="GangPreemptionAffinity/100Nodes_10PreemptorGangs_10Pods_Evicting_1000InitPods",
    ),
    Row(
        "BasicScheduling (pod groups)",
        "5,000",
        "3,000 (1,000 basic groups of 3)",
        ("BasicScheduling", "--pods", "3000"),
        upstream="BasicScheduling/5000Nodes_1000Groups_3000Pods",
    ),
    Row(
        "SchedulingWithResourceClaimTemplate",
        "500 × 10 devices",
        "2,500 (after 2,500)",
        ("SchedulingWithResourceClaimTemplate",),
        56,
        upstream="SchedulingWithResourceClaimTemplate/5000pods_500nodes",
        script="scheduler_perf_dra.py",
    ),
    Row(
        "SteadyStateClusterResourceClaimTemplate, empty",
        "500 × 10 devices",
        "batches of 10 for 10 s",
        ("SteadyStateClusterResourceClaimTemplate", "--claims", "empty"),
        64,
        upstream="SchedulingWithResourceClaimTemplate/empty_500nodes",
        script="scheduler_perf_dra.py",
    ),
    Row(
        "SteadyStateClusterResourceClaimTemplate, half",
        "500 × 10 devices (2,500 allocated)",
        "batches of 10 for 10 s",
        ("SteadyStateClusterResourceClaimTemplate", "--claims", "half"),
        60,
        upstream="SchedulingWithResourceClaimTemplate/half_500nodes",
        script="scheduler_perf_dra.py",
    ),
    Row(
        "SteadyStateClusterResourceClaimTemplate, full",
        "500 × 10 devices (4,990 allocated)",
        "batches of 10 for 10 s",
        ("SteadyStateClusterResourceClaimTemplate", "--claims", "full"),
        60,
        upstream="SchedulingWithResourceClaimTemplate/full_500nodes",
        script="scheduler_perf_dra.py",
    ),
    # dra/extendedresource: pods asking for an extended resource a DeviceClass backs
    *(
        Row(
            f"ExtendedResource (DRA), {kind.lower()}, {classes} classes",
            "500 × 10 devices",
            "2,500 (after 2,500)",
            ("ExtendedResource", "--variant", f"{kind}_{classes}classes_5000pods_500nodes"),
            floor,
            upstream=f"ExtendedResource/{kind}_{classes}classes_5000pods_500nodes",
            script="scheduler_perf_dra.py",
        )
        for kind, classes, floor in (("Explicit", 25, 120), ("Explicit", 50, 130), ("Implicit", 25, 130))
    ),
    # dra/{consumablecapacity,partitionabledevices}: the steady state at upstream's performance sizes (no floors)
    *(
        Row(
            f"{workload}, {claims}",
            f"500 × {devices}",
            "batches of 10 for 10 s",
            (workload, "--claims", claims),
            upstream=f"{workload}/{claims}_500nodes",
            script="scheduler_perf_dra.py",
        )
        for workload, devices in (
            ("ConsumableCapacity", "4 shared devices"),
            ("Partitionable", "2 partitions"),
            ("PartitionableBacktracking", "8 partitions"),
        )
        for claims in ("empty", "half", "full")
    ),
    # dra/{prioritizedlist,devicetaints}: upstream runs only their 10-pod integration size
    Row(
        "FirstAvailable",
        "1 × 10 devices",
        "10",
        ("FirstAvailable", "--nodes", "1", "--pods", "10"),
        upstream="FirstAvailable/fast",
        script="scheduler_perf_dra.py",
    ),
    Row(
        "DeviceTaintToleration",
        "1 × 10 tainted devices",
        "10",
        ("DeviceTaintToleration", "--nodes", "1", "--pods", "10"),
        upstream="DeviceTaintToleration/fast",
        script="scheduler_perf_dra.py",
    ),
]


def run(row: Row) -> dict[str, object]:
    cmd = [sys.executable, str(HERE / row.script), *row.args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


TABLE = "benchmarks/table.py"
SIDE_BY_SIDE = "benchmarks/side_by_side.py"
SIDE_BY_SIDE_HTTP = "benchmarks/side_by_side.py (http)"


def machine() -> str:
    """The CPU model and count, Python and numpy: what a reader needs to compare figures."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}, numpy {np.__version__}"


def replace_between_markers(path: Path, text: str, script: str = TABLE) -> None:
    """Put ``text`` between the file's ``<!-- SCRIPT: begin -->`` and ``<!-- SCRIPT: end -->``."""
    begin, end_marker = f"<!-- {script}: begin -->", f"<!-- {script}: end -->"
    doc = path.read_text()
    start, end = doc.find(begin), doc.find(end_marker)
    if start < 0 or end < start:
        raise SystemExit(f"{path}: no {begin} ... {end_marker} markers to write the table between")
    path.write_text(doc[: start + len(begin)] + "\n" + text + doc[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=None, help="workload names (a prefix is enough)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per row; the median is shown, then the range")
    parser.add_argument("--update", type=Path, default=None, help="write the table between this file's markers")
    args = parser.parse_args()
    rows = [r for r in ROWS if not args.only or any(r.workload.startswith(o) for o in args.only)]
    out: list[str] = []

    def emit(line: str) -> None:
        out.append(line)
        print(line, flush=True)

    runs = "one run per row" if args.repeat == 1 else f"the median of {args.repeat} runs per row, then their range"
    emit(f"Measured {datetime.date.today().isoformat()} on {machine()}; {runs}.")
    emit("")
    emit("| workload | nodes | measured pods | pods/s | × floor | × bare port | peak RSS | upstream floor |")
    emit("|---|---|---|---|---|---|---|---|")
    for row in rows:
        results = []
        for _ in range(args.repeat):
            print(f"{row.workload} {' '.join(row.args)} ...", file=sys.stderr, flush=True)
            results.append(run(row))
        rates = sorted(float(r["pods_per_second"]) for r in results)  # type: ignore[arg-type]
        median = rates[len(rates) // 2]
        shown = f"{median:,.0f}" if len(rates) == 1 else f"{median:,.0f} ({rates[0]:,.0f}–{rates[-1]:,.0f})"
        ratios = sorted(float(r["ratio_to_bare_port"]) for r in results if "ratio_to_bare_port" in r)  # type: ignore[arg-type]
        if not ratios:
            bare = "—"
        elif len(ratios) == 1:
            bare = f"{ratios[0]:.2f}"
        else:
            bare = f"{ratios[len(ratios) // 2]:.2f} ({ratios[0]:.2f}–{ratios[-1]:.2f})"
        times = f"{median / row.floor:.1f}×" if row.floor else "—"
        rss = max(float(r["peak_rss_mib"]) for r in results)  # type: ignore[arg-type]
        floor = f"{row.floor:,}" if row.floor else "—"
        cells = [row.workload, row.nodes, row.measured, shown, times, bare, f"{rss:.0f} MiB", floor]
        emit("| " + " | ".join(cells) + " |")
    if args.update is not None:
        replace_between_markers(args.update, "\n".join(out) + "\n")


if __name__ == "__main__":
    main()
