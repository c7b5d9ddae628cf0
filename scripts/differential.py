"""The large differential run: N seeded random clusters (tests/random_clusters.py: resources, init
and sidecar containers, overhead, node and pod affinity, topology spread, taints, host ports,
priorities with preemption and PodDisruptionBudgets, volumes, DRA claims) through upstream's
scheduler (the oracle built by scripts/build_upstream.sh, one process for the run) and through
``kubesched simulate``, compared by tests/oracle.py's ``disagreement``. Prints each disagreement
(case number and what differed) and, last, ``agree: A/N``.

    python scripts/differential.py --cases 10000
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.oracle import disagreement, kubesched, upstream  # noqa: E402
from tests.random_clusters import make_case  # noqa: E402

BATCH = 50


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0, help="the first case number (cases are seeded by number)")
    ap.add_argument("--keep", type=Path, help="write each disagreeing case's cluster file into this folder")
    args = ap.parse_args()
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_upstream.sh")], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"differential: scripts/build_upstream.sh failed:\n{built.stderr}")
    oracle = Path(built.stdout.strip().splitlines()[-1]) / "oracle"
    agree = 0
    started = time.monotonic()
    numbers = list(range(args.first, args.first + args.cases))
    with tempfile.TemporaryDirectory(prefix="kubesched-differential-") as tmp:
        for at in range(0, len(numbers), BATCH):
            batch = numbers[at : at + BATCH]
            paths = []
            for case in batch:
                path = Path(tmp) / f"case-{case}.yaml"
                path.write_text(yaml.safe_dump_all(make_case(random.Random(case))))
                paths.append(path)
            for case, path in zip(batch, paths, strict=True):
                try:
                    (theirs,) = upstream(oracle, [path])
                    why = disagreement(theirs[0], kubesched(path))
                except RuntimeError as exc:  # the oracle could not judge it: said, and counted as not agreeing
                    why = f"no verdict: {exc}"
                if not why:
                    agree += 1
                    continue
                print(f"case {case}: {why}", flush=True)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / path.name).write_text(path.read_text())
    seconds = time.monotonic() - started
    print(f"{args.cases} random clusters in {seconds:.0f} s (kube-scheduler v1.37.2 as the oracle)")
    print(f"agree: {agree}/{args.cases}")


if __name__ == "__main__":
    main()
