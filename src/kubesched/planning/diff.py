"""``kubesched diff A B``: what changed between two runs, each the JSON that ``simulate -o json``
or ``replay -o json`` wrote (two configurations, two policies, two workloads): the pods that moved
to another node, went pending or were placed, and, for replays, the allocation and fragmentation
curves side by side."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.errors import InputError

SIMULATE, REPLAY = "simulate", "replay"


@dataclass(slots=True)
class Diff:
    kind: str
    moved: list[dict[str, Any]] = field(default_factory=list)  # bound in both, on other nodes
    went_pending: list[dict[str, Any]] = field(default_factory=list)  # bound in A, not in B
    got_placed: list[dict[str, Any]] = field(default_factory=list)  # pending in A, bound in B
    only_in: dict[str, list[str]] = field(default_factory=dict)  # pods in one run only
    unchanged: int = 0
    curve: list[dict[str, Any]] = field(default_factory=list)  # replays: the two curves per point
    summary: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "moved": self.moved,
            "wentPending": self.went_pending,
            "gotPlaced": self.got_placed,
            "onlyIn": self.only_in,
            "unchanged": self.unchanged,
            "curve": self.curve,
            "summary": self.summary,
        }


def load_run(path: str) -> tuple[str, dict[str, Any]]:
    """A run's JSON and which command wrote it."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror or exc}", file=path) from None
    except ValueError as exc:
        raise InputError(f"not JSON: {exc}", file=path) from None
    if isinstance(doc, dict) and isinstance(doc.get("pods"), list):
        return SIMULATE, doc
    if isinstance(doc, dict) and isinstance(doc.get("curve"), list) and isinstance(doc.get("params"), dict):
        return REPLAY, doc
    raise InputError("not the JSON of kubesched simulate -o json or replay -o json", file=path)


def diff(a_path: str, b_path: str) -> Diff:
    kind_a, a = load_run(a_path)
    kind_b, b = load_run(b_path)
    if kind_a != kind_b:
        raise InputError(f"{a_path} is a {kind_a} run and {b_path} a {kind_b} run: compare runs of one kind")
    if kind_a == SIMULATE:
        return _pods(a, b)
    return _curves(a, b)


def _key(p: dict[str, Any]) -> str:
    return f"{p.get('namespace') or 'default'}/{p['name']}"


def _pods(a: dict[str, Any], b: dict[str, Any]) -> Diff:
    out = Diff(SIMULATE)
    pa = {_key(p): p for p in a["pods"]}
    pb = {_key(p): p for p in b["pods"]}
    for key in sorted(pa.keys() & pb.keys()):
        x, y = pa[key], pb[key]
        na, nb = x.get("nodeName"), y.get("nodeName")
        if na and nb and na != nb:
            out.moved.append({"pod": key, "from": na, "to": nb})
        elif na and not nb:
            out.went_pending.append({"pod": key, "from": na, "reason": y.get("reason"), "message": y.get("message")})
        elif nb and not na:
            out.got_placed.append({"pod": key, "to": nb, "reasonBefore": x.get("message") or x.get("reason")})
        else:
            out.unchanged += 1
    out.only_in = {"a": sorted(pa.keys() - pb.keys()), "b": sorted(pb.keys() - pa.keys())}
    sa, sb = a.get("stats") or {}, b.get("stats") or {}
    out.summary = {k: {"a": sa.get(k), "b": sb.get(k)} for k in ("bound", "pending") if k in sa or k in sb}
    return out


def _curves(a: dict[str, Any], b: dict[str, Any]) -> Diff:
    out = Diff(REPLAY)
    axis = "arrivedPct" if a["params"].get("mode") == "arrivals" else "time"
    if (b["params"].get("mode") == "arrivals") != (axis == "arrivedPct"):
        raise InputError("one replay is in arrivals mode and the other in timed mode: their curves do not align")
    cb = {pt[axis]: pt for pt in b["curve"]}
    for pt in a["curve"]:
        other = cb.get(pt[axis])
        if other is None:
            continue
        row: dict[str, Any] = {axis: pt[axis]}
        for k in ("allocatedPct", "fragmentationPct"):
            if k in pt and k in other:
                row[k] = {"a": pt[k], "b": other[k], "delta": round(other[k] - pt[k], 4)}
        out.curve.append(row)
    sa, sb = a.get("summary") or {}, b.get("summary") or {}
    out.summary = {k: {"a": sa.get(k), "b": sb.get(k)} for k in ("pods", "bound", "failed") if k in sa or k in sb}
    out.summary["params"] = {"a": a["params"], "b": b["params"]}
    return out
