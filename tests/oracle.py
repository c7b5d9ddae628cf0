"""Upstream's scheduler as the judge of a cluster file: ``upstream/cmd/oracle`` (kube-scheduler
v1.37.2's scheduler in process, built by ``scripts/build_upstream.sh``) and ``kubesched simulate``
run on the same files, and ``disagreement`` says what differs: a pending pod's FailedScheduling
message word for word, the node its preemption nominated and the victims, each node's Filter
verdict in the last attempt (the plugin that rejected it and the reasons), its node (one of
upstream's top-scored nodes: upstream picks among ties at random), and every plugin's raw and
weighted score on every node in the attempt that placed it."""

from __future__ import annotations

import atexit
import json
import select
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubesched.features import FeatureGates
from kubesched.simulate.output import explain_dict
from kubesched.simulate.runner import simulate


class _Served:
    """One ``oracle --serve`` process for a set of arguments, kept for the test session: a file's
    answer costs 0.15 s there against 0.35 s for a process of its own (Go's start-up, upstream's
    plugin registry and informers). Paths go one at a time, each answered by one line."""

    def __init__(self, args: list[str]) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (kept open as long as the process)
        self.proc = subprocess.Popen(
            [*args, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True
        )

    def answer(self, path: Path, timeout: float) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(f"{path}\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else ""
        except BrokenPipeError:  # it refused its arguments (a configuration) and exited
            line = ""
        if not line:
            self.close()
            self.stderr.seek(0)
            raise RuntimeError(f"oracle --serve gave no answer for {path}: {self.stderr.read().decode()[-3000:]}")
        got = json.loads(line)
        if isinstance(got, dict) and "oracleError" in got:
            raise RuntimeError(got["oracleError"])
        return got

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


_SERVED: dict[tuple[str, ...], _Served] = {}
SERVED_LIMIT = 3


@atexit.register
def _close_served() -> None:
    for served in _SERVED.values():
        served.close()


def upstream(
    oracle: Path, paths: Sequence[Path], *, config: Path | None = None, gates: str = "", together: bool = False
) -> list[list[dict[str, Any]]]:
    """Each file's pending pods' outcomes, as the oracle prints them (one JSON line per file);
    ``together``: every pending pod created at once (pod groups scheduled as one). Files go to an
    ``oracle --serve`` process kept per set of arguments."""
    args = [str(oracle), *(["--config", str(config)] if config else []), *(["--feature-gates", gates] if gates else [])]
    args += ["--together"] if together else []
    served = _SERVED.get(tuple(args))
    if served is None or served.proc.poll() is not None:
        if len(_SERVED) >= SERVED_LIMIT:  # tests with a configuration of their own: the oldest goes
            _SERVED.pop(next(iter(_SERVED))).close()
        served = _SERVED[tuple(args)] = _Served(args)
    try:
        return [served.answer(path, timeout=60) for path in paths]
    except RuntimeError:
        if served.proc.poll() is not None:  # it died (said in the error): the next call starts another
            _SERVED.pop(tuple(args), None)
        raise


def kubesched(
    path: Path, pod: str = "default/incoming", *, config: Path | None = None, gates: str = ""
) -> dict[str, Any]:
    """The same outcome from ``kubesched simulate``: node, last FailedScheduling message, nominated
    node, victims, and the weighted scores of the attempt that placed it."""
    result = simulate(
        [str(path)],
        config_path=str(config) if config else None,
        explain=[pod],
        feature_gates=FeatureGates.parse(gates) if gates else None,
    )
    namespace, name = pod.split("/")
    mine = next(p for p in result.pods if p["namespace"] == namespace and p["name"] == name)
    failures = [
        e["message"]
        for e in result.events
        if e["reason"] == "FailedScheduling" and e["namespace"] == namespace and e["name"] == name
    ]
    history = result.explain.get(pod) or []
    last = explain_dict(history[-1]) if history else {}
    final = last.get("finalscore-result") or {} if mine["nodeName"] else {}
    raw = last.get("score-result") or {} if mine["nodeName"] else {}
    return {
        "pod": pod,
        "node": mine["nodeName"],
        "message": failures[-1] if failures else None,
        "nominatedNode": _nominated(history) or mine.get("nominatedNodeName"),
        "gated": _gated(mine),
        "victims": sorted(
            f"{d['namespace']}/{d['name']}" for d in result.deleted_pods if d.get("reason") == "PreemptionByScheduler"
        ),
        "scores": {n: {p: int(v) for p, v in s.items()} for n, s in final.items()},
        "raw": {n: {p: int(v) for p, v in s.items()} for n, s in raw.items()},
        "filters": {n: _verdict(v) for n, v in (last.get("filter-result") or {}).items()},
    }


def _nominated(history: list[Any]) -> str | None:
    """The node the pod's last preemption nominated, as its PostFilter results mark it (the pod's
    own nominatedNodeName is cleared once it is bound)."""
    for attempt in reversed(history):
        for node, verdicts in (explain_dict(attempt).get("postfilter-result") or {}).items():
            if "preemption victim" in verdicts.values():
                return str(node)
    return None


def _gated(pod: dict[str, Any]) -> str | None:
    """The PreEnqueue plugin holding the pod back and its message, as the oracle words it."""
    if pod.get("reason") == "PreEnqueue":
        return str(pod["message"])
    if pod.get("reason") == "SchedulingGated":
        return f"SchedulingGates: {pod['message']}"
    return None


def _verdict(plugins: dict[str, str]) -> tuple[str, str] | None:
    """A node's Filter result as the simulator's map shows it: the plugin that rejected it and
    the message, or None when every plugin passed it."""
    return next(((p, m) for p, m in plugins.items() if m != "passed"), None)


def _upstream_verdict(status: dict[str, Any]) -> tuple[str, str] | None:
    if status.get("code") == "Success":
        return None
    return status.get("plugin", ""), ", ".join(status.get("reasons") or [])


def disagreement(theirs: dict[str, Any], mine: dict[str, Any]) -> str:
    """What kubesched did otherwise than upstream, or "" when they agree."""
    if (theirs.get("gated") or None) != mine["gated"]:
        return f"held back: upstream {theirs.get('gated')!r}, kubesched {mine['gated']!r}"
    if (theirs.get("message") or None) != mine["message"]:
        return f"message: upstream {theirs.get('message')!r}, kubesched {mine['message']!r}"
    if theirs.get("victims", []) != mine["victims"]:
        upstream_side = f"{theirs.get('victims', [])} on {theirs.get('nominatedNode')}"
        return f"victims: upstream {upstream_side}, kubesched {mine['victims']} on {mine['nominatedNode']}"
    if theirs.get("nominatedNode") and theirs["nominatedNode"] != mine["nominatedNode"]:
        return f"nominated node: upstream {theirs['nominatedNode']}, kubesched {mine['nominatedNode']}"
    filters = {n: _upstream_verdict(v) for n, v in (theirs.get("filters") or {}).items()}
    for node_name in sorted({*filters, *mine["filters"]}):
        if node_name not in filters or node_name not in mine["filters"]:
            side = "upstream" if node_name in filters else "kubesched"
            return f"Filter on {node_name}: only {side} ran it"
        if filters[node_name] != mine["filters"][node_name]:
            return f"Filter on {node_name}: upstream {filters[node_name]}, kubesched {mine['filters'][node_name]}"
    if not theirs.get("node"):
        return f"upstream left it pending, kubesched bound it to {mine['node']}" if mine["node"] else ""
    top = theirs.get("topNodes") or [theirs["node"]]
    if mine["node"] not in top:
        return f"node: upstream chose among {top}, kubesched {mine['node']}"
    for node_name, plugins in (theirs.get("scores") or {}).items():
        here = mine["scores"].get(node_name) or {}
        for plugin in sorted({*plugins, *here} - {"total"}):
            if here.get(plugin, 0) != plugins.get(plugin, 0):
                return f"{plugin} on {node_name}: upstream {plugins.get(plugin, 0)}, kubesched {here.get(plugin, 0)}"
    for node_name, plugins in (theirs.get("raw") or {}).items():
        here = mine["raw"].get(node_name) or {}
        for plugin in sorted({*plugins, *here}):
            if here.get(plugin, 0) != plugins.get(plugin, 0):
                theirs_raw, mine_raw = plugins.get(plugin, 0), here.get(plugin, 0)
                return f"raw {plugin} on {node_name}: upstream {theirs_raw}, kubesched {mine_raw}"
    return ""
