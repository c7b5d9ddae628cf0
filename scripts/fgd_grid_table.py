"""The FGD grid as a Markdown table: each ``kubesched sweep -o json`` output given (one per trace
variant, or one for all) against the paper artifact's published runs
(``experiments/analysis/expected_results/analysis_allo_discrete.csv`` and
``analysis_frag_discrete.csv`` of hkust-adsl/kubernetes-scheduler-simulator, which the user
downloads: they are not part of this repository).

    python scripts/fgd_grid_table.py /tmp/grid/*.json \\
        --allocation analysis_allo_discrete.csv --fragmentation analysis_frag_discrete.csv > docs/fgd-grid.md

Cells more than ``--tolerance`` points from the published mean are marked.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from collections import defaultdict
from pathlib import Path

# the artifact's policy directories → kubesched's policy names
POLICIES = {
    "01-Random": "Random",
    "02-DotProd": "DotProduct",
    "03-GpuClustering": "GpuClustering",
    "04-GpuPacking": "GpuPacking",
    "05-BestFit": "BestFit",
    "06-FGD": "FGD",
}
ORDER = list(POLICIES.values())


def published(path: Path, column: str) -> dict[tuple[str, str], float]:
    runs: dict[tuple[str, str], list[float]] = defaultdict(list)
    with path.open() as f:
        for row in csv.DictReader(f):
            if row.get(column):
                runs[(row["workload"], POLICIES[row["sc_policy"]])].append(float(row[column]))
    return {k: statistics.fmean(v) for k, v in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweeps", nargs="+", type=Path)
    ap.add_argument("--allocation", type=Path, required=True)
    ap.add_argument("--fragmentation", type=Path, required=True)
    ap.add_argument("--tolerance", type=float, default=0.6)
    args = ap.parse_args()
    alloc100 = published(args.allocation, "100")
    alloc130 = published(args.allocation, "130")
    frag130 = published(args.fragmentation, "130")
    ours: dict[tuple[str, str], dict[str, float]] = {}
    wall = 0.0
    runs = 0
    for path in args.sweeps:
        doc = json.loads(path.read_text())
        for e in doc["summary"]:
            ours[(e["workload"], e["policy"])] = e
        wall += sum(r["wallSeconds"] for r in doc["runs"])
        runs += len(doc["runs"])
    head = ["trace", "policy", "allocated at 100 %", "published", "Δ", "at 130 %", "published", "Δ"]
    head += ["fragmented at 130 %", "published", "Δ"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    off = 0
    for workload in sorted({w for w, _ in ours}, key=lambda w: (w != "openb_pod_list_default", w)):
        for policy in sorted({p for w, p in ours if w == workload}, key=ORDER.index):
            e = ours[(workload, policy)]
            cells = []
            for mine, sd, pub in (
                (e["allocatedPctAt100"], e["allocatedPctAt100Std"], alloc100.get((workload, policy))),
                (e["allocatedPctAtLoad"], e["allocatedPctAtLoadStd"], alloc130.get((workload, policy))),
                (e["fragmentationPctAtLoad"], e["fragmentationPctAtLoadStd"], frag130.get((workload, policy))),
            ):
                if mine is None or pub is None:
                    cells += ["–", "–", "–"]
                    continue
                delta = mine - pub
                mark = " **!**" if abs(delta) > args.tolerance else ""
                off += bool(mark)
                cells += [f"{mine:.2f} ± {sd:.2f}", f"{pub:.2f}", f"{delta:+.2f}{mark}"]
            print(f"| {workload.removeprefix('openb_pod_list_')} | {policy} | " + " | ".join(cells) + " |")
    print()
    print(f"{runs} runs, {wall / 60:.1f} minutes of replay; {off} cells more than {args.tolerance} points off.")


if __name__ == "__main__":
    main()
