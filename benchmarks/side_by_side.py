"""kubesched against upstream kube-scheduler v1.37.2 on the same machine, in the same run: first the
schedulers alone, like for like (``like_for_like.py``: each on the same workload file and window, the
README's headline); then, comparing whole stacks, each workload both have, through upstream's own
scheduler_perf (its integration harness: kube-apiserver
and etcd in process, the real scheduler, ``SchedulingThroughput`` averaged as its CI reports it) and
through ``benchmarks/scheduler_perf.py`` / ``scheduler_perf_dra.py`` in kubesched's embedded cluster;
then over HTTP (``benchmarks/scheduler_perf_http.py``), SchedulingBasic with an API server and a
scheduler as processes: etcd + kube-apiserver + kube-scheduler against ``kubesched apiserver`` +
``kubesched scheduler``, and kube-scheduler against ``kubesched scheduler`` on the same
kube-apiserver, kubesched's results on the pods off and on.

    python benchmarks/side_by_side.py [--only NAME ...] [--part like-for-like|in-process|http] > side_by_side.md
    python benchmarks/side_by_side.py --update docs/benchmarks.md   # between its markers there

Upstream's binaries are built by ``scripts/build_upstream_perf.sh`` (Go and the module proxy; once
per machine, minutes per scheduler_perf directory). The rows are ``table.py``'s rows that name an
upstream workload; the workloads run one after the other, never side by side, so neither competes
with the other for the CPUs. Progress goes to stderr; the table (with the date and the machine) to
stdout.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import like_for_like
import table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def upstream_tree() -> Path:
    """k8s.io/kubernetes v1.37.2's scheduler_perf sources in the Go module cache."""
    cache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True).stdout.strip()
    return Path(cache) / "k8s.io" / "kubernetes@v1.37.2" / "test" / "integration" / "scheduler_perf"


def directory_of(test_case: str, tree: Path) -> str | None:
    """The scheduler_perf directory whose performance-config.yaml defines ``test_case``."""
    return _case_directories(tree).get(test_case)


@functools.cache
def _case_directories(tree: Path) -> dict[str, str]:
    """Each test case of the tree's performance-config.yaml files → its directory (the first, in
    path order, that defines it); read once, with libyaml's parser where PyYAML has it."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: dict[str, str] = {}
    for path in sorted(tree.rglob("performance-config.yaml")):
        for case in yaml.load(path.read_text(), Loader=loader) or []:
            out.setdefault(case.get("name"), str(path.parent.relative_to(tree)))
    return out


def run_upstream(binary: Path, package_dir: Path, bin_dir: Path, test_case: str, workload: str) -> float:
    """Upstream's ``BenchmarkPerfScheduling/<case>/<workload>`` once; its SchedulingThroughput average."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            str(binary),
            "-test.run=^$",
            f"-test.bench=^BenchmarkPerfScheduling/{test_case}/{workload}$",
            "-test.benchtime=1x",
            "-perf-scheduling-label-filter=",
            f"-data-items-dir={out}",
        ]
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        # a run below its CI threshold fails the benchmark but still writes its data items
        done = subprocess.run(cmd, cwd=package_dir, env=env, capture_output=True, text=True)
        for path in Path(out).glob("*.json"):
            for item in json.loads(path.read_text()).get("dataItems") or []:
                if (item.get("labels") or {}).get("Metric") == "SchedulingThroughput":
                    return float(item["data"]["Average"])
    tail = "\n".join(line for line in done.stdout.splitlines() if "FAIL" in line or "want" in line)
    raise RuntimeError(f"{test_case}/{workload}: upstream reported no SchedulingThroughput\n{tail}")


HTTP_SIZE = ("--nodes", "5000", "--init-pods", "1000", "--pods", "10000")
HTTP_ROWS = (  # label, kubesched's stack, its extra arguments
    ("kubesched apiserver + scheduler against kube-apiserver + etcd + kube-scheduler", "kubesched", ()),
    ("the same, kubesched writing its results on each pod", "kubesched", ("--write-results",)),
    ("kubesched scheduler against kube-scheduler, both on kube-apiserver + etcd", "mixed", ()),
    ("the same, kubesched writing its results on each pod", "mixed", ("--write-results",)),
)


def run_http(stack: str, *extra: str) -> float:
    """One ``scheduler_perf_http.py`` run; its pods/s."""
    cmd = [sys.executable, str(HERE / "scheduler_perf_http.py"), "--stack", stack, *HTTP_SIZE, *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[1:])}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["pods_per_second"])


def http_table(emit: Callable[[str], None]) -> None:
    """SchedulingBasic over HTTP: upstream's stack once, then each kubesched row beside it."""
    emit(
        f"Measured {datetime.date.today().isoformat()} on {table.machine()}; SchedulingBasic, 5,000 nodes, "
        "10,000 measured pods after 1,000, created over HTTPS by a client with 32 requests in flight; "
        "upstream: etcd + kube-apiserver + kube-scheduler v1.37.2 as processes."
    )
    emit("")
    emit("| path | upstream pods/s | kubesched pods/s | kubesched ÷ upstream |")
    emit("|---|---|---|---|")
    print("SchedulingBasic over HTTP (upstream) ...", file=sys.stderr, flush=True)
    theirs = run_http("upstream")
    for label, stack, extra in HTTP_ROWS:
        print(f"SchedulingBasic over HTTP ({stack} {' '.join(extra)}) ...", file=sys.stderr, flush=True)
        mine = run_http(stack, *extra)
        emit(f"| {label} | {theirs:,.0f} | {mine:,.0f} | {mine / theirs:.2f}× |")


# the in-process rows the README shows (every row is in docs/benchmarks.md), and always the lowest ratio
README_ROWS = (
    "SchedulingBasic/5000Nodes_10000Pods",
    "PreemptionAsync/5000Nodes",
    "TopologySpreading/5000Nodes_5000Pods",
    "SchedulingPodAntiAffinity/5000Nodes_2000Pods",
    "SchedulingCSIPVs/5000Nodes_5000Pods",
    "SchedulingWithResourceClaimTemplate/5000pods_500nodes",
    "GangScheduling/5000Nodes_1000Gangs_3000Pods",
)


def between(doc: str, script: str) -> list[str]:
    """The lines ``doc`` holds between ``script``'s markers (none without them)."""
    begin, end = doc.find(f"<!-- {script}: begin -->"), doc.find(f"<!-- {script}: end -->")
    return doc[begin:end].splitlines()[1:] if 0 <= begin < end else []


def table_rows(doc: str, script: str) -> list[list[str]]:
    """The cells of the table between ``script``'s markers in ``doc`` (header and rule left out)."""
    lines = [line for line in between(doc, script) if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]


def readme_summary(doc: str) -> str:
    """The README's short form of docs/benchmarks.md's two side-by-side tables."""
    in_process = table_rows(doc, table.SIDE_BY_SIDE)
    http = table_rows(doc, table.SIDE_BY_SIDE_HTTP)
    ratio = {r[0]: float(r[5].rstrip("×")) for r in in_process if r[5] != "—"}
    if not ratio:
        return ""
    ahead = sum(1 for v in ratio.values() if v > 1)
    low = min(ratio, key=ratio.__getitem__)
    stamp = between(doc, table.SIDE_BY_SIDE)[0]  # "Measured <date> on <machine>; upstream: ..."
    out = [
        f"kubesched ahead of upstream's own scheduler_perf on {ahead} of the {len(ratio)} workloads both ran and "
        f"upstream measured, {min(ratio.values()):.1f}× to {max(ratio.values()):.1f}× (every row, those upstream "
        f"gave no figure for, and how it was measured: "
        f"[benchmarks](docs/benchmarks.md#side-by-side-with-upstreams-own-scheduler_perf)). "
        + stamp.split(";")[0]
        + ".",
        "",
        "| workload | upstream v1.37.2 pods/s | kubesched pods/s | × |",
        "|---|---|---|---|",
    ]
    for r in in_process:
        if r[0] in README_ROWS or r[0] == low:
            out.append(f"| {r[0]}, in process | {r[3]} | {r[4]} | {r[5]} |")
    label = ""
    for r in http:
        label = f"{label}, results written on each pod" if r[0].startswith("the same") else r[0]
        out.append(f"| SchedulingBasic over HTTP: {label} | {r[1]} | {r[2]} | {r[3]} |")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=None, help="workload names (a prefix is enough)")
    parser.add_argument(
        "--part", choices=("all", "like-for-like", "in-process", "http"), default="all", help="which table"
    )
    parser.add_argument("--repeat", type=int, default=3, help="like-for-like: alternating runs a side per row")
    parser.add_argument("--update", type=Path, default=None, help="write the tables between this file's markers")
    args = parser.parse_args()
    if shutil.which("go") is None:
        sys.exit("side_by_side: go is not on PATH (Go >= 1.26 builds upstream's scheduler_perf)")
    if args.part in ("all", "like-for-like"):  # the schedulers alone, first: the README's headline
        rows = [r for r in like_for_like.ROWS if not args.only or any(r.name.startswith(o) for o in args.only)]
        out = like_for_like.table(like_for_like.compare(rows, args.repeat), args.repeat)
        print(out, flush=True)
        if args.update is not None:
            table.replace_between_markers(args.update, out + "\n", like_for_like.MARKER)
            table.replace_between_markers(
                ROOT / "README.md", like_for_like.readme_block(out) + "\n", like_for_like.MARKER
            )
    if args.part in ("all", "in-process"):
        in_process(args.only, args.update)
    if args.part in ("all", "http"):
        out: list[str] = []

        def emit(line: str) -> None:
            out.append(line)
            print(line, flush=True)

        print()
        http_table(emit)
        if args.update is not None:
            table.replace_between_markers(args.update, "\n".join(out) + "\n", table.SIDE_BY_SIDE_HTTP)
    if args.update is not None:
        readme = ROOT / "README.md"
        table.replace_between_markers(readme, readme_summary(args.update.read_text()), table.SIDE_BY_SIDE)


def in_process(only: list[str] | None, update: Path | None) -> None:
    """The in-process table: every row of table.py that names an upstream workload."""
    out: list[str] = []

    def emit(line: str) -> None:
        out.append(line)
        print(line, flush=True)

    rows = [
        r for r in table.ROWS if r.upstream is not None and (not only or any(r.workload.startswith(o) for o in only))
    ]
    tree = upstream_tree()
    dirs = {r.upstream: directory_of(r.upstream.split("/", 1)[0], tree) for r in rows if r.upstream}
    wanted = sorted({d for d in dirs.values() if d is not None})
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_upstream_perf.sh"), *wanted], capture_output=True, text=True
    )
    if built.returncode != 0:  # no module proxy, a failed build: its last words, no traceback
        last = (built.stderr.strip().splitlines() or ["(no output)"])[-1]
        sys.exit(f"side_by_side: building upstream's scheduler_perf failed: {last}")
    bin_dir = Path(built.stdout.strip().splitlines()[-1])
    emit(
        f"Measured {datetime.date.today().isoformat()} on {table.machine()}; "
        "upstream: kube-scheduler v1.37.2's scheduler_perf (SchedulingThroughput average)."
    )
    emit("")
    emit("| workload | nodes | measured pods | upstream pods/s | kubesched pods/s | kubesched ÷ upstream |")
    emit("|---|---|---|---|---|---|")
    for row in rows:
        assert row.upstream is not None
        test_case, workload = row.upstream.split("/", 1)
        directory = dirs[row.upstream]
        if directory is None:
            continue
        print(f"{row.upstream} (upstream) ...", file=sys.stderr, flush=True)
        binary = bin_dir / f"scheduler_perf_{directory.replace('/', '_')}.test"
        try:
            theirs: float | None = run_upstream(binary, tree / directory, bin_dir, test_case, workload)
        except RuntimeError as exc:  # one workload upstream could not measure: in the table, said, and on
            print(f"side_by_side: {exc}", file=sys.stderr)
            theirs = None
        print(f"{row.workload} {' '.join(row.args)} (kubesched) ...", file=sys.stderr, flush=True)
        mine = float(table.run(row)["pods_per_second"])  # type: ignore[arg-type]
        both = ("no figure", "—") if theirs is None else (f"{theirs:,.0f}", f"{mine / theirs:.2f}×")
        emit(f"| {row.upstream} | {row.nodes} | {row.measured} | {both[0]} | {mine:,.0f} | {both[1]} |")
    if update is not None:
        table.replace_between_markers(update, "\n".join(out) + "\n", table.SIDE_BY_SIDE)


if __name__ == "__main__":
    main()
