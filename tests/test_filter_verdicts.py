"""RunFilterPlugins' verdicts, merged at once (``run_filters``) or kept unmerged until read
(``filter_pass``), against a node-by-node reference: each node keeps the first plugin that
rejected it, no plugin runs once every node is rejected, and a code that is no rejection on a
node no earlier plugin rejected is the attempt's error (upstream's framework.go)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import make_node, make_pod
from kubesched.api.pod import PodInfo, pod_info_from
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin, NodeVerdicts
from kubesched.framework.status import Code
from kubesched.scheduler.plugins import in_tree_registry
from kubesched.testing import Cluster

NODES = 6
PLUGINS = ("V0", "V1", "V2", "V3")
REJECTIONS = (int(Code.UNSCHEDULABLE), int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), int(Code.PENDING))
# what each plugin answers this example (None: no verdict), and which ran
SCRIPT: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
CALLS: list[str] = []


def scripted(plugin: str) -> type[FilterPlugin]:
    class Scripted(FilterPlugin):
        name = plugin

        def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: object) -> NodeVerdicts | None:
            CALLS.append(plugin)
            got = SCRIPT.get(plugin)
            if got is None:
                return None
            code, reason = got
            return NodeVerdicts(code.copy(), reason.copy(), lambda r: (f"{plugin} reason {r}",))

    return Scripted


def scripted_cluster() -> Cluster:
    registry = in_tree_registry()
    for name in PLUGINS:
        registry.register(name, scripted(name))
    cfg = {
        "profiles": [{"plugins": {"filter": {"disabled": [{"name": "*"}], "enabled": [{"name": n} for n in PLUGINS]}}}]
    }
    return Cluster(*(make_node(f"n{i}") for i in range(NODES)), config=cfg, registry=registry)


CLUSTER = scripted_cluster()

verdict = st.one_of(
    st.none(),
    st.tuples(
        st.lists(
            st.sampled_from([0, 0, 0, 2, 3, 6]) | st.sampled_from([1, 4, 5, -1, 7]),
            min_size=NODES,
            max_size=NODES,
        ),
        st.lists(st.integers(0, 1 << 40), min_size=NODES, max_size=NODES),
    ),
)


def reference(script: list[tuple[list[int], list[int]] | None]):
    """Node by node: codes, plugin index, reason, the plugins called, the error's (plugin, reason)."""
    codes, plugins, reasons = [0] * NODES, [0] * NODES, [0] * NODES
    called = []
    for i, got in enumerate(script):
        called.append(PLUGINS[i])
        if got is None:
            continue
        for row in range(NODES):
            if codes[row] == 0 and got[0][row] != 0:
                codes[row], plugins[row], reasons[row] = got[0][row], i, got[1][row]
        if all(codes):
            break
    error = next(
        ((PLUGINS[plugins[r]], reasons[r]) for r in range(NODES) if codes[r] and codes[r] not in REJECTIONS), None
    )
    return codes, plugins, reasons, called, error


@settings(max_examples=400, deadline=None)
@given(script=st.lists(verdict, min_size=len(PLUGINS), max_size=len(PLUGINS)))
def test_merged_and_unmerged_verdicts_are_the_node_by_node_statuses(script):
    fwk = CLUSTER.sched.profiles["default-scheduler"]
    table = CLUSTER.sched.cache.table
    rows = [table.index[f"n{i}"] for i in range(NODES)]  # the scripts are by node name
    SCRIPT.clear()
    for name, got in zip(PLUGINS, script, strict=True):
        if got is not None:
            code = np.zeros(table.n, np.int8)
            reason = np.zeros(table.n, np.int64)
            code[rows], reason[rows] = got[0], got[1]
            SCRIPT[name] = (code, reason)
    codes, plugins, reasons, called, error = reference(script)
    pod = pod_info_from(make_pod("p"))

    for run in ("merged", "unmerged"):
        CALLS.clear()
        if run == "merged":
            outcome = fwk.run_filters(CycleState(), pod, table)
        else:
            verdicts = fwk.filter_pass(CycleState(), pod, table)
            assert verdicts.passed[rows].tolist() == [c == 0 for c in codes]
            if error is not None:
                assert verdicts.suspect  # an error is never missed without the merge
            outcome = verdicts.outcome(fwk.filter_names)
        assert called == CALLS, run
        assert outcome.codes[rows].tolist() == codes, run
        rejected = [r for r in range(NODES) if codes[r]]
        assert [int(outcome.plugins[rows[r]]) for r in rejected] == [plugins[r] for r in rejected], run
        assert [int(outcome.reasons[rows[r]]) for r in rejected] == [reasons[r] for r in rejected], run
        if error is None:
            assert outcome.error is None, run
        else:
            assert outcome.error is not None and outcome.error.code == Code.ERROR, run
            assert outcome.error.reasons == (f'running "{error[0]}" filter plugin: {error[0]} reason {error[1]}',)


class Erring(FilterPlugin):
    """Passes n1; on n2 answers the code in the pod's ``code`` label."""

    name = "Erring"

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: object) -> NodeVerdicts:
        codes = np.zeros(len(nodes.names), np.int8)  # type: ignore[attr-defined]
        codes[nodes.index["n2"]] = int(pod.labels["code"])  # type: ignore[attr-defined]
        return NodeVerdicts(codes, 0, lambda _id: ("erring",))


@pytest.mark.parametrize(
    ("code", "placed", "message"),
    [
        (Code.UNSCHEDULABLE, "n1", None),
        (Code.ERROR, None, 'running "Erring" filter plugin: erring'),
        (Code.WAIT, None, 'running "Erring" filter plugin: erring'),
    ],
)
@pytest.mark.parametrize("n2_full", [False, True])
def test_a_verdict_that_is_no_rejection_errs_unless_an_earlier_plugin_rejected_the_node(
    code: Code, placed: str | None, message: str | None, n2_full: bool
) -> None:
    """With a node that fits, the attempt still errs on another node's Error verdict, as
    upstream's parallel Filter run reports the first error it meets; but not when NodeResourcesFit,
    before the plugin, already rejected that node (upstream never runs the plugin there)."""
    registry = in_tree_registry()
    registry.register("Erring", Erring)
    cfg = {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Erring"}]}}}]}
    c = Cluster(make_node("n1", cpu="4"), make_node("n2", cpu="1" if n2_full else "4"), config=cfg, registry=registry)
    pod = make_pod("p", cpu="2")
    pod["metadata"]["labels"] = {"code": str(int(code))}
    c.create(pod)
    c.settle()
    if n2_full:
        assert c.node_of("p") == "n1"
        return
    assert c.node_of("p") == placed
    if message is not None:
        assert c.sched.last_message["default/p"] == message


@pytest.mark.parametrize(
    ("code", "checked"),
    [
        (Code.UNSCHEDULABLE, True),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, True),
        (Code.PENDING, True),
        (Code.ERROR, False),
        (Code.WAIT, False),
    ],
)
def test_only_rejections_are_checked_verdicts(code: Code, checked: bool) -> None:
    """``reject_where`` vouches for its codes only when the code is a rejection: an Error verdict
    (a volume plugin's lookup failing) is still looked through and fails the attempt."""
    v = NodeVerdicts.reject_where(np.array([True, False]), code, "why")
    assert v.checked is checked
    assert v.code.tolist() == [int(code), 0]
