"""Instructions per pod: SchedulingBasic's measured scheduling counted by callgrind, in total and
per phase of a pod's path (queue, PreFilter, Filter, PreScore, Score, selectHost, assume,
Reserve/Permit, PreBind/Bind, the Scheduled event, PostBind, the informer's updates, metrics).

    python benchmarks/instructions.py                   # 10, 100 and 1,000 nodes
    python benchmarks/instructions.py --nodes 10 100 --no-phases

Instructions do not depend on what else the machine runs, so these figures compare across days
and machines of one architecture where pods/s cannot. Each size runs SchedulingBasic (upstream's
node and pod templates, ``scheduler_perf.py``) under ``valgrind --tool=callgrind`` with
``OPENBLAS_NUM_THREADS=1`` and bytecode already compiled, at two counts of measured pods after the
same init pods; the figure per pod is the difference of the two runs' instructions divided by
the difference of the pod counts, so start-up and the first cycle's costs drop out (and what was
built before the measured pods is frozen out of the garbage collector's walks, as ``kubesched
replay`` freezes its run's cluster: a full collection landing in one run only was a lump of ~90k
a pod at 100 nodes). Only the
measured scheduling is counted: ``scheduler_perf.run_workload`` runs it inside a C function of
a small helper library (compiled here with gcc into ``.cache/instructions``), and callgrind
collects only inside that function (``--toggle-collect``).

Per phase: Python functions are not C symbols callgrind can tell apart, so a second pair of runs
enters each phase's method through its own C function of the helper (``ks_phase_Score``...),
called back through ctypes; a phase's figure is that function's inclusive instructions, less
what the trampoline itself costs (calibrated on an empty call) and less the phases nested in it.
"other" is the total (from the runs without trampolines) less the phases: the cycle's glue.

The phases are counted on the pure-Python path (``KUBESCHED_PURE_PYTHON=1``: compiled classes
cannot be wrapped); the totals on both, where the install compiled the hot path with mypyc
(``kubesched.compiled``): "total (pure Python)" and "total (compiled)".
Needs valgrind and gcc (Debian: ``apt-get install valgrind gcc``). Prints a table, then JSON.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = ROOT / ".cache" / "instructions"

# phase: the methods entered through its trampoline, as "module:Class.method"
PHASES: dict[str, tuple[str, ...]] = {
    "queue": ("kubesched.scheduler.queue:SchedulingQueue.pop",),
    "PreFilter": ("kubesched.scheduler.framework.runtime:Framework.run_pre_filter",),
    "Filter": ("kubesched.scheduler.nodesearch.search:NodeSearch.find_nodes_that_fit",),
    "PreScore": ("kubesched.scheduler.framework.runtime:Framework.run_pre_score",),
    "Score": ("kubesched.scheduler.framework.runtime:Framework.run_score",),
    "selectHost": ("kubesched.scheduler.schedule_pod:HostPicker.select",),
    "assume": (
        "kubesched.scheduler.schedule_one:ScheduleOne._assume",
        "kubesched.scheduler.cache:Cache.finish_binding",
    ),
    "ReservePermit": (
        "kubesched.scheduler.framework.runtime:Framework.run_reserve",
        "kubesched.scheduler.framework.runtime:Framework.run_permit",
    ),
    "PreBindBind": (
        "kubesched.scheduler.framework.runtime:Framework.run_pre_bind",
        "kubesched.scheduler.framework.runtime:Framework.run_bind",
    ),
    "event": ("kubesched.client.inprocess:InProcessClient.record_event",),
    "PostBind": ("kubesched.scheduler.framework.runtime:Framework.run_post_bind",),
    "informer": ("kubesched.scheduler.eventhandlers:EventHandlers._dispatch",),
    "metrics": (
        "kubesched.scheduler.metrics:SchedulerMetrics.start_cycle",
        "kubesched.scheduler.metrics:SchedulerMetrics.pod_scheduled",
        "kubesched.scheduler.metrics:SchedulerMetrics.pod_bound",
        "kubesched.scheduler.metrics:Histogram.observe",
    ),
}
# a phase entered inside another goes through its own trampoline only where named here (its
# instructions then leave the parent's figure); any other nesting stays with the outer phase
NESTED = {"PreFilter": "Filter"}
LABELS = {
    "ReservePermit": "Reserve, Permit",
    "PreBindBind": "PreBind, Bind (the store write)",
    "event": "Scheduled event",
}
SIZES = {10: 40, 100: 100, 1000: 100}  # nodes: init pods
COUNTS = (100, 300)  # measured pods of the two runs

HELPER = """
/* one C function per phase, so that callgrind can name the instructions run inside it */
typedef void (*ks_body)(void);
/* ctypes enters ks_enter_<name> from libffi's assembly, whose stack callgrind cannot follow;
   the phase is the ordinary C call inside it */
#define PHASE(name) \\
    __attribute__((noinline)) void ks_phase_##name(ks_body body) { body(); __asm__ volatile(""); } \\
    void ks_enter_##name(ks_body body) { ks_phase_##name(body); __asm__ volatile(""); }
PHASE(total)
PHASE(calibrate)
"""


def helper() -> Path:
    """The trampolines' shared library, compiled once (without optimisation: no tail calls)."""
    source = HELPER + "".join(f"PHASE({name})\n" for name in PHASES)
    CACHE.mkdir(parents=True, exist_ok=True)
    lib = CACHE / "libksphases.so"
    src = CACHE / "ksphases.c"
    if not lib.exists() or not src.exists() or src.read_text() != source:
        src.write_text(source)
        subprocess.run(["gcc", "-O0", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


Body = ctypes.CFUNCTYPE(None)


class Trampolines:
    """Enter a Python callable through ``ks_phase_<name>``; counts the calls per phase."""

    def __init__(self, lib: Path) -> None:
        self.lib = ctypes.CDLL(str(lib))
        self.calls: dict[str, int] = {}  # calls callgrind counted: inside the total, and calibrate's
        self.active: list[str] = []
        self.in_total = False

    def enter(self, name: str, fn: Callable[[], Any]) -> Any:
        box: list[tuple[bool, Any]] = []

        def body() -> None:
            try:
                box.append((True, fn()))
            except BaseException as exc:  # carried across the C frame, raised below
                box.append((False, exc))

        if self.in_total or name in ("total", "calibrate"):
            self.calls[name] = self.calls.get(name, 0) + 1
        inner = name != "total"  # the phases run inside the total, not nested in it
        if inner:
            self.active.append(name)
        else:
            self.in_total = True
        try:
            getattr(self.lib, f"ks_enter_{name}")(Body(body))
        finally:
            if inner:
                self.active.pop()
            else:
                self.in_total = False
        ok, value = box[0]
        if ok:
            return value
        raise value

    def install(self) -> None:
        """Wrap every phase's methods (in place, on their classes)."""
        import importlib

        for phase, targets in PHASES.items():
            for target in targets:
                module, qual = target.split(":")
                cls_name, attr = qual.split(".")
                cls = getattr(importlib.import_module(module), cls_name)
                setattr(cls, attr, self._wrapped(phase, cls.__dict__[attr]))

    def _wrapped(self, phase: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        parent = NESTED.get(phase)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            outer = self.active[-1] if self.active else None
            if outer is not None and outer != parent:  # stays with the outer phase
                return orig(*args, **kwargs)
            return self.enter(phase, lambda: orig(*args, **kwargs))

        return wrapper


def child(nodes: int, init_pods: int, pods: int, phases: bool, out: Path) -> None:
    """Inside valgrind: the workload, its measured scheduling entered through ``ks_phase_total``."""
    sys.path.insert(0, str(HERE))
    import scheduler_perf

    tramp = Trampolines(helper())
    from kubesched import compiled

    if phases and compiled.state == "compiled":  # a compiled class's methods cannot be wrapped
        sys.exit("instructions: phases are counted on the pure-Python path: set KUBESCHED_PURE_PYTHON=1")
    if phases:
        tramp.install()
        for _ in range(1000):  # the trampoline's own cost, on an empty call
            tramp.enter("calibrate", lambda: None)
    init = (scheduler_perf.pod("init", i) for i in range(init_pods))
    measured = [scheduler_perf.pod("measured", i) for i in range(pods)]

    def measure(work: Callable[[], None]) -> None:
        # what was built before the measured pods is kept out of the collector's walks, as
        # ``kubesched replay`` keeps its run's cluster: a full collection walks every long-lived
        # object, a step of millions of instructions that falls in one of the two runs and not
        # the other (~90k a pod at 100 nodes in the difference), not a cost of each pod
        gc.collect()
        gc.freeze()
        try:
            tramp.enter("total", work)
        finally:
            gc.unfreeze()

    result = scheduler_perf.run_workload(nodes, init, measured, measure=measure)
    out.write_text(json.dumps({"calls": tramp.calls, **result}))


def inclusive(callgrind_out: Path) -> dict[str, int]:
    """Each ``ks_phase_*`` function's inclusive instructions, read with callgrind_annotate."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(callgrind_out)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s.*\bks_phase_(\w+)\b", line)
        if m:
            found[m.group(2)] = found.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    return found


def count(
    nodes: int, init_pods: int, pods: int, phases: bool, pure: bool = True
) -> tuple[dict[str, int], dict[str, int]]:
    """One run under callgrind: inclusive instructions per trampoline, and calls per phase;
    ``pure``: on the pure-Python path even where the hot path is compiled."""
    with tempfile.TemporaryDirectory() as tmp:
        out, data = Path(tmp) / "callgrind.out", Path(tmp) / "result.json"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=ks_phase_total",
            "--toggle-collect=ks_phase_calibrate",
            f"--callgrind-out-file={out}",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            json.dumps([nodes, init_pods, pods, phases, str(data)]),
        ]
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        env.pop("KUBESCHED_PURE_PYTHON", None)
        if pure or phases:
            env["KUBESCHED_PURE_PYTHON"] = "1"
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0 or not data.exists():
            sys.exit(f"instructions: the run under valgrind failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        return inclusive(out), json.loads(data.read_text())["calls"]


def per_pod(nodes: int, init_pods: int, phases: bool, compiled: bool) -> dict[str, float]:
    """Instructions per measured pod: in total on the pure-Python path, on the compiled one
    (``compiled``), and (with ``phases``) per phase."""
    (lo, hi) = COUNTS

    def total(pure: bool) -> float:
        counted = [count(nodes, init_pods, n, False, pure)[0]["total"] for n in COUNTS]
        return (counted[1] - counted[0]) / (hi - lo)

    figures = {"total": total(True)}
    if compiled:
        figures["total (compiled)"] = total(False)
    if not phases:
        return figures
    runs = [count(nodes, init_pods, n, True) for n in COUNTS]
    own: list[dict[str, float]] = []
    for incl, calls in runs:
        overhead = incl["calibrate"] / calls["calibrate"]
        mine = {p: incl.get(p, 0) - overhead * calls.get(p, 0) for p in PHASES}
        for p, parent in NESTED.items():  # a nested phase's instructions (and trampolines) leave its parent
            mine[parent] -= incl.get(p, 0)
        own.append(mine)
    for p in PHASES:
        figures[p] = (own[1][p] - own[0][p]) / (hi - lo)
    figures["other"] = figures["total"] - sum(figures[p] for p in PHASES)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="*", default=list(SIZES), help="cluster sizes")
    parser.add_argument("--no-phases", action="store_true", help="the total only (two runs per size, not four)")
    parser.add_argument("--update", type=Path, default=None, help="write the table between this file's markers")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        nodes, init_pods, pods, phases, out = json.loads(args.child)
        child(nodes, init_pods, pods, phases, Path(out))
        return
    missing = [tool for tool in ("valgrind", "callgrind_annotate", "gcc") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"instructions: {', '.join(missing)} not found (Debian: apt-get install valgrind gcc)")
    helper()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=False)  # bytecode warm
    sys.path.insert(0, str(HERE))
    import table

    compiled = subprocess.run(
        [sys.executable, "-c", "import kubesched.compiled as c; print(c.state)"], capture_output=True, text=True
    ).stdout.strip()
    print(f"kubesched's hot path here: {compiled}", file=sys.stderr)
    results = {n: per_pod(n, SIZES.get(n, 100), not args.no_phases, compiled == "compiled") for n in args.nodes}
    out = [
        f"Measured {datetime.date.today().isoformat()} on {table.machine()}; instructions per measured pod "
        f"(callgrind), SchedulingBasic, {COUNTS[1]} pods against {COUNTS[0]} after the same init pods.",
        "",
        "| phase | " + " | ".join(f"{n:,} nodes" for n in results) + " |",
        "|---|" + "---|" * len(results),
    ]
    rows = [*(p for p in PHASES if not args.no_phases), *(["other"] if not args.no_phases else []), "total"]
    rows += ["total (compiled)"] if compiled == "compiled" else []
    for row in rows:
        label = LABELS.get(row, row) if row != "total" else "total (pure Python)"
        out.append(f"| {label} | " + " | ".join(f"{results[n][row] / 1000:,.0f}k" for n in results) + " |")
    print("\n".join(out))
    print(json.dumps({str(n): {k: round(v) for k, v in r.items()} for n, r in results.items()}))
    if args.update is not None:
        table.replace_between_markers(args.update, "\n".join(out) + "\n", "benchmarks/instructions.py")


if __name__ == "__main__":
    main()
