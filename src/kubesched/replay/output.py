"""What ``kubesched replay`` and ``kubesched sweep`` print: aligned text tables, or JSON."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from kubesched.replay.runner import ReplayResult
from kubesched.simulate.output import WALL_METRICS

CURVE_POINTS = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130)


def _table(rows: Sequence[Sequence[Any]], out: TextIO) -> None:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    for r in cells:
        out.write("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def print_replay(result: ReplayResult, out: TextIO) -> None:
    p, s = result.params, result.summary
    out.write(
        f"policy {p['policy']}, mode {p['mode']}, seed {p['seed']}"
        + (f", load {p['load']}" if p.get("load") is not None else "")
        + f"; {s['nodes']} nodes, {s['gpus']} GPUs\n"
    )
    if p["mode"] == "arrivals":
        by = {pt["arrivedPct"]: pt for pt in result.curve}
        rows: list[list[Any]] = [["ARRIVED %", "GPU ALLOCATED %", "FRAGMENTED % OF GPUS", "FRAGMENTED % OF IDLE"]]
        for pct in CURVE_POINTS:
            pt = by.get(pct)
            if pt is not None:
                rows.append(
                    [pct, _pct(pt["allocatedPct"]), _pct(pt["fragmentationPct"]), _pct(pt["fragmentationOfIdlePct"])]
                )
        _table(rows, out)
    else:
        peak = max(result.curve, key=lambda pt: pt["allocatedPct"]) if result.curve else None
        mean = statistics.fmean(pt["allocatedPct"] for pt in result.curve) if result.curve else 0.0
        if peak is not None:
            out.write(
                f"GPU allocated: peak {peak['allocatedPct']:.2f}% at {peak['time']:.0f}s, "
                f"time-average {mean:.2f}% over {len(result.curve)} samples\n"
            )
    out.write(
        f"pods {s['pods']:,}, bound {s['bound']:,}, failed {s['failed']:,}, attempts {s['attempts']:,}, "
        f"virtual time {s['virtualSeconds']:,.0f}s\n"
    )
    g = s.get("gangs")
    if g:
        out.write(
            f"gangs {g['gangs']:,} ({g['pods']:,} pods): admitted {g['admitted']:,}, failed {g['failed']:,}, "
            f"waiting {g['waiting']:,}, preempted {g['preempted']:,}\n"
        )
    if result.reasons:
        top = ", ".join(f"{n:,} {r}" for r, n in list(result.reasons.items())[:4])
        out.write(f"node verdicts against pods left pending: {top}\n")


def replay_json(result: ReplayResult, timing: bool = False) -> str:
    """The result as JSON; wall-clock figures only with ``timing``, so that outputs can be diffed."""
    doc = result.to_json()
    if timing:
        doc["timing"] = result.timing
    else:
        doc["metrics"] = {k: v for k, v in doc["metrics"].items() if k not in WALL_METRICS}
    return json.dumps(doc, indent=2, sort_keys=False)


def summarize(rows: Iterable[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Mean and standard deviation of ``keys`` per (workload, policy, gangs) over the seeds'
    runs that reached the measure (a run whose workload never arrives at 130 % has none there):
    ``<key>Runs`` says how many, of ``runs``."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["workload"], r["policy"], r.get("gangs") or "none"), []).append(r)
    out = []
    for (workload, policy, gangs), rs in groups.items():
        entry: dict[str, Any] = {"workload": workload, "policy": policy, "runs": len(rs)}
        if gangs != "none" or any((r.get("gangs") or "none") != "none" for r in rows):
            entry["gangs"] = gangs
        for k in keys:
            vals = [r[k] for r in rs if r.get(k) is not None]
            entry[k] = round(statistics.fmean(vals), 3) if vals else None
            entry[k + "Std"] = round(statistics.stdev(vals), 3) if len(vals) > 1 else 0.0
            entry[k + "Runs"] = len(vals)
        out.append(entry)
    return out


def column_title(key: str, load_pct: int | None = None) -> str:
    """A sweep's measure as a person reads it: ``allocatedPctAt100`` → ``ALLOCATED % AT 100 %``
    (``AtLoad`` → the load's percent)."""
    measure, _, at = key.partition("PctAt")
    if at == "Load":
        at = str(load_pct) if load_pct is not None else "LOAD"
    words = {"allocated": "ALLOCATED", "fragmentation": "FRAGMENTED"}.get(measure, measure.upper())
    return f"{words} % AT {at} %"


def print_sweep(summary: list[dict[str, Any]], keys: Sequence[str], out: TextIO, load_pct: int | None = None) -> None:
    gangs = any("gangs" in e for e in summary)  # a column only when the sweep varied it
    head = ["WORKLOAD", "POLICY", *(["GANGS"] if gangs else []), "RUNS", *(column_title(k, load_pct) for k in keys)]
    rows: list[list[Any]] = [head]
    for e in summary:
        rows.append(
            [
                e["workload"],
                e["policy"],
                *([e.get("gangs", "none")] if gangs else []),
                e["runs"],
                *(_cell(e, k) for k in keys),
            ]
        )
    _table(rows, out)


def _cell(entry: dict[str, Any], key: str) -> str:
    """``mean ± sd``, with how many of the runs it averages when some never reached the measure."""
    if entry[key] is None:
        return "-"
    text = f"{entry[key]:.2f} ± {entry[key + 'Std']:.2f}"
    reached = entry.get(key + "Runs", entry["runs"])
    return text if reached == entry["runs"] else f"{text} ({reached} of {entry['runs']} runs)"
