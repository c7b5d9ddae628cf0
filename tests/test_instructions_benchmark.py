"""benchmarks/instructions.py enters every phase of a pod's path through its own C function: each
measured pod passes each phase's trampoline as often as the scheduling cycle runs that phase, the
nested PreFilter stays inside Filter, and the scheduling it wraps still binds every pod. (The
counting itself is callgrind's; this runs the same child without valgrind.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_each_phase_is_entered_once_per_pod_as_the_cycle_runs_it(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    args = json.dumps([10, 40, 60, True, str(out)])
    env = {**os.environ, "KUBESCHED_PURE_PYTHON": "1"}  # as the benchmark counts phases: compiled classes stay shut
    subprocess.run(
        [sys.executable, str(BENCHMARKS / "instructions.py"), "--child", args], check=True, timeout=120, env=env
    )
    result = json.loads(out.read_text())
    calls = result["calls"]
    pods = 60
    assert result["pods_per_second"] > 0
    # once per pod: the cycle's phases, the Scheduled event, the informer's update for the binding
    for phase in ("PreFilter", "Filter", "PreScore", "Score", "selectHost", "event", "PostBind", "informer"):
        assert calls[phase] == pods, phase
    # twice per pod: assume and finish binding, Reserve and Permit, PreBind and Bind
    for phase in ("assume", "ReservePermit", "PreBindBind"):
        assert calls[phase] == 2 * pods, phase
    # the embedded cluster's driver pops only when the queue has a pod ready (has_active)
    assert calls["queue"] == pods
    assert calls["total"] == 1 and calls["calibrate"] == 1000
