"""Replay benchmarks on Alibaba's GPU trace (``../shared/traces/alibaba-gpu-v2023``, or the folder in
``KUBESCHED_TRACES``): the default pod list replayed on its 1,523 nodes on the virtual clock, and one
arrivals-to-130 % experiment (the FGD paper's method) per policy. Prints one JSON line per run.

    python benchmarks/replay.py                  # timed replay + the seven policies, seed 42
    python benchmarks/replay.py --policies FGD   # just one
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path

from kubesched.app import gc_settings
from kubesched.replay.profiles import ALL_POLICIES
from kubesched.replay.runner import replay

ROOT = Path(__file__).resolve().parent.parent


def trace_dir() -> Path:
    path = Path(os.environ.get("KUBESCHED_TRACES", ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023"))
    if not (path / "openb_pod_list_default.csv").is_file():
        sys.exit(f"replay.py: no trace at {path} (set KUBESCHED_TRACES to the alibaba-gpu-v2023 folder)")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", default=",".join(ALL_POLICIES))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workload", default="openb_pod_list_default.csv")
    args = parser.parse_args()
    gc_settings.tune()  # as the kubesched command does before running anything
    t = trace_dir()
    workload = str(t / args.workload)
    started = time.perf_counter()
    r = replay(workload, [str(t / "openb_node_list_all_node.csv")], mode="timed", samples=200, seed=args.seed)
    wall = time.perf_counter() - started
    print(
        json.dumps(
            {
                "run": "timed",
                "workload": args.workload,
                "nodes": r.summary["nodes"],
                "pods": r.summary["pods"],
                "bound": r.summary["bound"],
                "virtualDays": round(r.summary["virtualSeconds"] / 86400, 1),
                "seconds": round(wall, 2),
                "pods_per_second": round(r.summary["pods"] / wall, 1),
            }
        ),
        flush=True,
    )
    for policy in args.policies.split(","):
        # the run before leaves its cluster as cyclic garbage: collected here, it is not timed as
        # part of this run (a full collection at this run's start took ~0.4 s of the FGD run's 5)
        gc.collect()
        started = time.perf_counter()
        r = replay(
            workload,
            [str(t / "openb_node_list_gpu_node.csv")],
            mode="arrivals",
            policy=policy,
            load=1.3,
            seed=args.seed,
            tie_break="name",
        )
        wall = time.perf_counter() - started
        print(
            json.dumps(
                {
                    "run": "arrivals",
                    "policy": policy,
                    "pods": r.summary["pods"],
                    "failed": r.summary["failed"],
                    "allocatedPctAt100": r.summary["allocatedPctAt"]["100"],
                    "allocatedPctAt130": r.summary["allocatedPctAt"]["130"],
                    "seconds": round(wall, 2),
                    "pods_per_second": round(r.summary["pods"] / wall, 1),
                }
            ),
            flush=True,
        )
    print(json.dumps({"peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))


if __name__ == "__main__":
    main()
