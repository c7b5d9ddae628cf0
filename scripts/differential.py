"""The large differential run: N seeded random clusters (the generator of tests/test_oracle.py)
through upstream's scheduler (the oracle built by scripts/build_upstream.sh) and through kubesched,
in process. A case agrees when an unschedulable pod's message is upstream's word for word, a
scheduled pod's node is among upstream's top-scored nodes, and every plugin's weighted score on
every node is upstream's. Prints each disagreement (case number and what differed) and, last,
``agree: A/N``.

    python scripts/differential.py --cases 10000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_oracle import FINAL_SCORES, make_case  # noqa: E402

from kubesched.testing import Cluster  # noqa: E402

SCHEDULED = "Scheduled"


def upstream(oracle: Path, path: Path) -> dict[str, Any]:
    done = subprocess.run([str(oracle), str(path)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip())
    return json.loads(done.stdout)[0]


def kubesched(objects: list[dict[str, Any]]) -> tuple[str | None, str | None, dict[str, dict[str, int]]]:
    """(node, message, weighted scores per node and plugin) of the case's pending pod."""
    cluster = Cluster(*objects, results=True)
    cluster.settle()
    pod = cluster.store.get("Pod", "default", "incoming")
    node = (pod.get("spec") or {}).get("nodeName")
    message = None
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            message = c.get("message")
    scores = json.loads(((pod.get("metadata") or {}).get("annotations") or {}).get(FINAL_SCORES) or "{}")
    return node, message, {n: {p: int(v) for p, v in s.items()} for n, s in scores.items()}


def disagreement(theirs: dict[str, Any], node: str | None, message: str | None, scores: dict[str, Any]) -> str:
    if theirs.get("message"):
        if node is not None or message != theirs["message"]:
            return f"upstream pending ({theirs['message']!r}), kubesched {node or message!r}"
        return ""
    top = theirs.get("topNodes") or [theirs.get("node")]
    if node not in top:
        return f"upstream chose among {top}, kubesched {node or message!r}"
    for node_name, plugins in (theirs.get("scores") or {}).items():
        mine = scores.get(node_name) or {}
        for plugin in {*plugins, *mine}:
            if mine.get(plugin, 0) != plugins.get(plugin, 0):
                return f"{plugin} on {node_name}: upstream {plugins.get(plugin, 0)}, kubesched {mine.get(plugin, 0)}"
    return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0, help="the first case number (cases are seeded by number)")
    args = ap.parse_args()
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build_upstream.sh")], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"differential: scripts/build_upstream.sh failed:\n{built.stderr}")
    oracle = Path(built.stdout.strip().splitlines()[-1]) / "oracle"
    agree = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kubesched-differential-") as tmp:
        for case in range(args.first, args.first + args.cases):
            objects = make_case(case)
            path = Path(tmp) / "case.yaml"
            path.write_text(yaml.safe_dump_all(objects))
            why = disagreement(upstream(oracle, path), *kubesched(objects))
            if why:
                print(f"case {case}: {why}", flush=True)
            else:
                agree += 1
    seconds = time.monotonic() - started
    print(f"{args.cases} random clusters in {seconds:.0f} s (kube-scheduler v1.37.2 as the oracle)")
    print(f"agree: {agree}/{args.cases}")


if __name__ == "__main__":
    main()
