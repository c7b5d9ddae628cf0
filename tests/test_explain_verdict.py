"""The verdict lines ``simulate --explain``, ``kubesched explain`` and the web UI show above an
attempt's table: where the pod went or why not, a skipped scoring, and what preemption did."""

from __future__ import annotations

import pytest

from kubesched.attempt_table import verdict

PASS = {"NodeResourcesFit": "passed", "TaintToleration": "passed"}
CPU = {"NodeResourcesFit": "Insufficient cpu"}
MESSAGE = (
    "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
    "2 No preemption victims found for incoming pod."
)

CASES = [
    (
        "scored and placed",
        {
            "filter-result": {"a": PASS, "b": PASS},
            "finalscore-result": {"a": {"NodeResourcesFit": "80"}, "b": {"NodeResourcesFit": "40"}},
            "selected-node": "a",
        },
        "",
        [("Verdict", "scheduled on a")],
    ),
    (
        "one feasible node is not scored",
        {"filter-result": {"a": PASS, "b": CPU}, "finalscore-result": {}, "selected-node": "a"},
        "",
        [
            ("Verdict", "scheduled on a"),
            ("Scoring", "skipped: only one node passed Filter, and a single feasible node is not scored"),
        ],
    ),
    (
        "pending with its FailedScheduling message",
        {"filter-result": {"a": CPU, "b": CPU}, "postfilter-result": {"a": {}, "b": {}}, "selected-node": ""},
        MESSAGE,
        [
            ("Verdict", "not scheduled: 0/2 nodes are available: 2 Insufficient cpu."),
            ("Preemption", "0/2 nodes are available: 2 No preemption victims found for incoming pod."),
        ],
    ),
    (
        "pending, an earlier attempt (no message)",
        {"filter-result": {"a": CPU, "b": CPU}, "postfilter-result": {"a": {}, "b": {}}, "selected-node": ""},
        "",
        [
            ("Verdict", "not scheduled: no node passed Filter (0/2)"),
            ("Preemption", "no node among 2 where evicting lower-priority pods makes room"),
        ],
    ),
    (
        "preemption nominated a node",
        {
            "filter-result": {"a": CPU, "b": CPU},
            "postfilter-result": {"a": {}, "b": {"DefaultPreemption": "preemption victim"}},
            "selected-node": "",
        },
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 1 Insufficient cpu.",
        [
            ("Verdict", "not scheduled: 0/2 nodes are available: 2 Insufficient cpu."),
            ("Preemption", "nominated b: lower-priority pods there are evicted to make room"),
        ],
    ),
    (
        "selected, then Permit refused",
        {
            "filter-result": {"a": PASS, "b": PASS},
            "finalscore-result": {"a": {"NodeResourcesFit": "80"}, "b": {"NodeResourcesFit": "40"}},
            "permit-result": {"Quota": "over quota"},
            "selected-node": "a",
        },
        "",
        [("Verdict", "a was selected, then Permit Quota: over quota")],
    ),
]


@pytest.mark.parametrize(("parsed", "message", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_verdict(parsed, message, want) -> None:
    assert verdict(parsed, message) == want
