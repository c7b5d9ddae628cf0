"""benchmarks/side_by_side.py writes the README's speed summary from docs/benchmarks.md's two tables:
the count of workloads kubesched is ahead on and the range of ratios over those upstream measured,
the chosen rows and always the lowest ratio, every HTTP row with its label carried to "the same"."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import side_by_side  # noqa: E402

DOC = """
<!-- benchmarks/side_by_side.py: begin -->
Measured 2026-01-02 on 2 CPUs (X), Python 3.11; upstream: kube-scheduler v1.37.2's scheduler_perf.

| workload | nodes | measured pods | upstream pods/s | kubesched pods/s | kubesched ÷ upstream |
|---|---|---|---|---|---|
| SchedulingBasic/5000Nodes_10000Pods | 5,000 | 10,000 | 100 | 3,000 | 30.00× |
| Other/slow | 100 | 100 | 40 | 20 | 0.50× |
| Other/fast | 100 | 100 | 10 | 500 | 50.00× |
| FirstAvailable/fast | 1 | 10 | no figure | 81 | — |
<!-- benchmarks/side_by_side.py: end -->

<!-- benchmarks/side_by_side.py (http): begin -->
Measured 2026-01-02.

| path | upstream pods/s | kubesched pods/s | kubesched ÷ upstream |
|---|---|---|---|
| both stacks | 300 | 900 | 3.00× |
| the same, kubesched writing its results on each pod | 300 | 600 | 2.00× |
<!-- benchmarks/side_by_side.py (http): end -->
"""


def test_the_readme_summary_counts_ranges_and_picks_rows() -> None:
    lines = side_by_side.readme_summary(DOC).splitlines()
    assert lines[0].startswith("kubesched ahead of upstream's own scheduler_perf on 2 of the 3 workloads")
    assert "0.5× to 50.0×" in lines[0]
    assert lines[0].endswith("Measured 2026-01-02 on 2 CPUs (X), Python 3.11.")
    assert lines[4:] == [
        "| SchedulingBasic/5000Nodes_10000Pods, in process | 100 | 3,000 | 30.00× |",
        "| Other/slow, in process | 40 | 20 | 0.50× |",  # the lowest ratio is always shown
        "| SchedulingBasic over HTTP: both stacks | 300 | 900 | 3.00× |",
        "| SchedulingBasic over HTTP: both stacks, results written on each pod | 300 | 600 | 2.00× |",
    ]


def test_no_table_no_summary() -> None:
    assert side_by_side.readme_summary("no markers here") == ""
