"""Scheduling results on the pod: kube-scheduler-simulator's ``resultstore`` and
``storereflector`` (``simulator/scheduler/plugin/resultstore/store.go``,
``simulator/scheduler/storereflector``), recorded from the columns a cycle already computed.

One ``PodResults`` rides in the attempt's CycleState. The framework's runners record each
plugin's status at PreFilter, PreScore, Reserve, Permit, PreBind and Bind; the per-node Filter
verdicts and Score results come from the cycle's Diagnosis and score columns in one pass. The
annotations are the simulator's keys and JSON shapes: maps sorted by key as Go's json.Marshal
writes them, "passed" / "success" / "wait" / "preemption victim", scores as strings,
finalscore = normalized score × weight, and ``result-history`` appending each attempt's map.

Past ``node_limit`` nodes, only the best-scored feasible nodes are listed one by one; the other
feasible nodes and the filtered-out ones are counted per reason in ``kubesched.io/filter-result-groups``
(the simulator lists every node, which on a 5,000-node cluster is megabytes per pod).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
PREFILTER_STATUS = PREFIX + "prefilter-result-status"
PREFILTER = PREFIX + "prefilter-result"
FILTER = PREFIX + "filter-result"
POSTFILTER = PREFIX + "postfilter-result"
PRESCORE = PREFIX + "prescore-result"
SCORE = PREFIX + "score-result"
FINALSCORE = PREFIX + "finalscore-result"
RESERVE = PREFIX + "reserve-result"
PERMIT = PREFIX + "permit-result"
PERMIT_TIMEOUT = PREFIX + "permit-result-timeout"
PREBIND = PREFIX + "prebind-result"
BIND = PREFIX + "bind-result"
SELECTED_NODE = PREFIX + "selected-node"
HISTORY = PREFIX + "result-history"
GROUPS = "kubesched.io/filter-result-groups"  # ours: the nodes not listed one by one, per reason

PASSED = "passed"
SUCCESS = "success"
WAIT = "wait"
VICTIM = "preemption victim"  # the simulator's PostFilterNominatedMessage
NODE_LIMIT = 10  # nodes listed one by one before the rest are grouped (--results-node-limit)
EXAMPLES = 3  # node names kept per group
ANNOTATION_LIMIT = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB
_NONE = np.zeros(0, np.int64)
_KEY_MIN = int(np.iinfo(np.int64).min)


def go_json(value: Any) -> str:
    """``encoding/json.Marshal``: compact, map keys sorted, and ``<``, ``>``, ``&``, U+2028,
    U+2029 escaped as Go escapes them for HTML safety."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        if ch in text:
            text = text.replace(ch, esc)
    return text


def go_duration(seconds: float) -> str:
    """``time.Duration.String()`` for a timeout in seconds: 0s, 500ms, 10s, 1m30s, 1h0m0s."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns / size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    secs = _trim(rest / 1e9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}"
    if minutes:
        return f"{sign}{minutes}m{secs}"
    return sign + secs


def _trim(x: float) -> str:
    return f"{x:.9f}".rstrip("0").rstrip(".")


def status_word(st: Any) -> str:
    """A plugin's Status as the simulator's wrapped plugins record it: ``success`` for a nil
    or Success status, else its message (Skip's is empty)."""
    return SUCCESS if st is None or st.is_success() else str(st.message())


@dataclass(slots=True)
class PodResults:
    """One attempt's results (the simulator's ``result``)."""

    pre_filter_status: dict[str, str] = field(default_factory=dict)
    pre_filter_result: dict[str, list[str]] = field(default_factory=dict)
    filter: dict[str, dict[str, str]] = field(default_factory=dict)
    groups: list[dict[str, Any]] = field(default_factory=list)
    post_filter: dict[str, dict[str, str]] = field(default_factory=dict)
    pre_score: dict[str, str] = field(default_factory=dict)
    score: dict[str, dict[str, str]] = field(default_factory=dict)
    final_score: dict[str, dict[str, str]] = field(default_factory=dict)
    reserve: dict[str, str] = field(default_factory=dict)
    permit: dict[str, str] = field(default_factory=dict)
    permit_timeout: dict[str, str] = field(default_factory=dict)
    pre_bind: dict[str, str] = field(default_factory=dict)
    bind: dict[str, str] = field(default_factory=dict)
    selected_node: str = ""
    node_limit: int = NODE_LIMIT
    write: bool = False  # written on the pod (else only kept for --explain)
    written: bool = False  # the binding carried them

    # -- what the runners record (each plugin's Status as the simulator's wrapped plugin words it)
    def observe(self, plugin: str, point: str, args: tuple[Any, ...], ret: Any, seconds: float) -> None:
        """One plugin call of the attempt, as the simulator's wrapped plugin records it: the
        framework's observer of a recorded cycle (``Framework.observer``)."""
        if point == "PreFilter":
            result, st = ret
            self.pre_filter_status[plugin] = status_word(st)
            if result is not None and not result.all_nodes():
                self.pre_filter_result[plugin] = list(result.node_names or ())
        elif point == "PreScore":
            self.pre_score[plugin] = status_word(ret)
        elif point == "Reserve":
            self.selected_node = args[2]  # (state, pod, node): the Reserve wrapper records it first
            self.reserve[plugin] = status_word(ret)
        elif point == "Permit":
            self.permit_status(plugin, ret[0], float(ret[1] or 0))
        elif point == "PreBind":
            self.pre_bind[plugin] = status_word(ret)
        elif point == "Bind":
            self.bind[plugin] = status_word(ret)

    def status(self, point: dict[str, str], plugin: str, st: Any) -> None:
        point[plugin] = status_word(st)

    def permit_status(self, plugin: str, st: Any, timeout: float) -> None:
        if st is None or st.is_success():
            msg = SUCCESS
        elif st.code.name == "WAIT":
            msg = WAIT
        else:
            msg = st.message()
        self.permit[plugin] = msg
        self.permit_timeout[plugin] = go_duration(timeout)

    def post_filter_result(self, plugin: str, nominated: str, node_names: list[str]) -> None:
        """The nodes PostFilter was given (the explicit ones; over the limit only the nominated
        one), the nominated node marked."""
        names = node_names if len(node_names) <= self.node_limit else [n for n in node_names if n == nominated]
        for name in names:
            verdicts = self.post_filter.setdefault(name, {})
            if name == nominated:
                verdicts[plugin] = VICTIM

    # -- the annotations ----------------------------------------------------------------------
    def annotations(self) -> dict[str, str]:
        """The simulator's annotations of this attempt (without ``result-history``)."""
        out = {
            PREFILTER: go_json({k: sorted(v) for k, v in self.pre_filter_result.items()}),
            PREFILTER_STATUS: go_json(self.pre_filter_status),
            FILTER: go_json(self.filter),
            POSTFILTER: go_json(self.post_filter),
            PRESCORE: go_json(self.pre_score),
            SCORE: go_json(self.score),
            FINALSCORE: go_json(self.final_score),
            RESERVE: go_json(self.reserve),
            PERMIT_TIMEOUT: go_json(self.permit_timeout),
            PERMIT: go_json(self.permit),
            PREBIND: go_json(self.pre_bind),
            BIND: go_json(self.bind),
            SELECTED_NODE: self.selected_node,
        }
        if self.groups:
            out[GROUPS] = go_json(self.groups)
        return out

    def pod_annotations(self, existing: dict[str, str] | None) -> dict[str, str]:
        """What the attempt writes on the pod: its annotations and ``result-history`` with this
        attempt appended, the oldest dropped until it fits (``updateResultHistory``)."""
        anns = self.annotations()
        history: list[Any] = []
        old = (existing or {}).get(HISTORY)
        if old:
            try:
                parsed = json.loads(old)
                history = parsed if isinstance(parsed, list) else []
            except ValueError:
                history = []
        history.append(anns)
        while history:
            text = go_json(history)
            if len(text) <= ANNOTATION_LIMIT:
                anns = {**anns, HISTORY: text}
                break
            history = history[1:]
        if GROUPS not in anns and (existing or {}).get(GROUPS):
            anns[GROUPS] = "[]"  # an earlier attempt's groups would no longer describe this one
        return anns


# -- Filter and Score, from the cycle's columns --------------------------------------------------
def record_nodes(
    res: PodResults,
    names: list[str],
    filter_names: list[str],
    skipped: set[str],
    diagnosis: Any,
    feasible: np.ndarray,
    scores: dict[str, tuple[np.ndarray, np.ndarray, int]] | None,
    total: np.ndarray | None,
    selected_row: int | None = None,
) -> None:
    """Filter verdicts for the nodes Filter ran on, and raw and weighted scores for the feasible
    nodes scored: ``scores`` maps a plugin to (raw, normalized, weight) over ``feasible``;
    ``selected_row`` (the node picked) is listed first.
    Nodes outside a PreFilterResult never reach Filter and are not listed (as upstream); a
    ``diagnosis`` of None: no node was rejected.

    Over ``res.node_limit`` nodes, the best-scored feasible nodes are listed and the rest grouped."""
    ran = [p for p in filter_names if p not in skipped]
    if diagnosis is None:  # no node rejected (the shape cache's entry passed them all)
        rejected_rows = _NONE
    else:
        rejected = diagnosis.codes != 0
        if diagnosis.absent_mask is not None:
            rejected = rejected & ~diagnosis.absent_mask
        rejected_rows = np.flatnonzero(rejected)
    n_feasible = len(feasible)
    limit = res.node_limit
    grouped = n_feasible + len(rejected_rows) > limit
    listed = _listed(feasible, total, selected_row, limit if grouped else n_feasible)
    passed = dict.fromkeys(ran, PASSED)  # one map for every feasible node listed: read, never changed
    listed_list = listed.tolist()
    listed_nodes = [names[r] for r in feasible[listed].tolist()]
    if filter_names:  # a profile without Filter plugins filters no node (findNodesThatPassFilters)
        for node in listed_nodes:
            res.filter[node] = passed
    if scores is not None and listed_list:
        # every plugin's column at once: raw, and normalized × weight, of the listed nodes, one row
        # per node; nodes with equal rows share one map (read, never changed)
        plugins = list(scores)
        cols = [scores[p] for p in plugins]
        raws = zip(*[c[0][listed].tolist() for c in cols], strict=True)
        finals = zip(*[(c[1][listed] * c[2]).tolist() for c in cols], strict=True)
        maps: dict[tuple[int, ...], dict[str, str]] = {}
        for node, raw, final in zip(listed_nodes, raws, finals, strict=True):
            m = maps.get(raw)
            if m is None:
                m = maps[raw] = dict(zip(plugins, map(str, raw), strict=True))
            res.score[node] = m
            m = maps.get(final)
            if m is None:
                m = maps[final] = dict(zip(plugins, map(str, final), strict=True))
            res.final_score[node] = m
    if n_feasible > len(listed_list):
        shown = set(listed_list)  # the first feasible nodes not listed, as examples
        examples = [i for i in range(min(n_feasible, len(shown) + EXAMPLES)) if i not in shown][:EXAMPLES]
        res.groups.append(_group("", PASSED, feasible[examples], names))
        res.groups[-1]["nodes"] = n_feasible - len(listed_list)
    if not len(rejected_rows):
        return
    plugin_names = diagnosis.plugin_names
    if not grouped:
        for row in rejected_rows.tolist():
            st = diagnosis.status_of(row)
            res.filter[names[row]] = _verdicts(ran, st.plugin, st.message())
        return
    room = max(0, limit - len(listed))
    for row in rejected_rows[:room].tolist():
        st = diagnosis.status_of(row)
        res.filter[names[row]] = _verdicts(ran, st.plugin, st.message())
    rest_rows = rejected_rows[room:]
    if not len(rest_rows):
        return
    # one group per (plugin, reason): both columns packed into one key, counted in one pass
    keys = diagnosis.plugins[rest_rows].astype(np.int64) * (1 << 40) + diagnosis.reasons[rest_rows]
    uniq, first, counts = np.unique(keys, return_index=True, return_counts=True)
    for key, at, count in sorted(zip(uniq.tolist(), first.tolist(), counts.tolist(), strict=True), key=lambda t: -t[2]):
        members = rest_rows[keys == key]
        st = diagnosis.status_of(int(rest_rows[at]))
        group = _group(st.plugin or plugin_names[key >> 40], st.message(), members, names)
        group["nodes"] = count
        res.groups.append(group)


def _listed(feasible: np.ndarray, total: np.ndarray | None, selected_row: int | None, k: int) -> np.ndarray:
    """Positions in ``feasible`` of the ``k`` nodes to list: the node picked first, then the
    best-scored (the earlier position among equals)."""
    n = len(feasible)
    if total is None or n <= 1:
        return np.arange(min(n, k))
    if total.dtype.kind in "iu" and n < (1 << 20) and int(total.min()) > -(1 << 40) and int(total.max()) < (1 << 40):
        # one integer key per node: higher score first, then the earlier position; the node
        # picked gets the smallest key, so one partial sort of the keys gives the whole order
        key = total.astype(np.int64) * -n + np.arange(n)
        if selected_row is not None:
            pick = np.flatnonzero(feasible == selected_row)
            if len(pick):
                key[pick[0]] = _KEY_MIN
        top = key.argpartition(k - 1)[:k] if k < n else np.arange(n)
        return top[key[top].argsort()]
    # any other score type: the same order by a full sort (picked first, score, position)
    picked = feasible == selected_row if selected_row is not None else np.zeros(n, bool)
    return np.lexsort((np.arange(n), -total, ~picked))[:k]


def _verdicts(ran: list[str], plugin: str | None, message: str) -> dict[str, str]:
    """RunFilterPlugins on one node stops at the first plugin that rejects it."""
    out: dict[str, str] = {}
    for p in ran:
        if p == plugin:
            out[p] = message
            return out
        out[p] = PASSED
    out[plugin or "Extender"] = message
    return out


def _group(plugin: str, reason: str, rows: np.ndarray, names: list[str]) -> dict[str, Any]:
    return {
        "plugin": plugin,
        "reason": reason,
        "nodes": len(rows),
        "examples": [names[r] for r in rows[:EXAMPLES].tolist()],
    }


def parse(annotations: dict[str, str]) -> dict[str, Any] | None:
    """The results on a pod, each key's JSON decoded (None when the pod carries none)."""
    if FILTER not in annotations and SELECTED_NODE not in annotations:
        return None
    out: dict[str, Any] = {}
    for key, value in annotations.items():
        if key.startswith(PREFIX) or key == GROUPS:
            short = key.removeprefix(PREFIX).removeprefix("kubesched.io/")
            if key == SELECTED_NODE:
                out[short] = value
                continue
            try:
                out[short] = json.loads(value)
            except ValueError:
                out[short] = value
    return out
