"""kube-scheduler v1.37.2's ``--feature-gates``, judged by upstream's binaries: the generated list
(``kubesched.feature_list``) is the registry kube-scheduler's binary prints, every gate is
accepted at its default, and kube-scheduler and kubesched refuse the same bad settings with the
same message; ``AllAlpha``/``AllBeta`` and the warning for a gate kubesched does not act on."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from click.testing import CliRunner
from tests.upstream import binaries

from kubesched.cli import main
from kubesched.errors import InputError
from kubesched.feature_list import GATES
from kubesched.features import FeatureGates, what_kubesched_does

EXAMPLE = "examples/basic/cluster.yaml"


def test_the_generated_list_is_kube_schedulers_registry() -> None:
    listed = json.loads(
        subprocess.run([str(binaries() / "oracle"), "--list-feature-gates"], check=True, capture_output=True).stdout
    )
    theirs = {
        g["name"]: (g["default"], bool(g.get("lockToDefault")), g["stage"], tuple(g.get("dependencies") or ()))
        for g in listed
    }
    mine = {name: spec[:4] for name, spec in GATES.items()}
    assert mine == theirs, "kube-scheduler's gates changed: run python scripts/gen_feature_gates.py"


# (--feature-gates value): kube-scheduler refuses each; kubesched must say the same
REFUSED = [
    "Foo=true",
    "NodeDeclaredFeatures=false",  # GA, locked to true
    "GitRepoVolumeDriver=true",  # deprecated, locked to false
    "TopologyAwareWorkloadScheduling=true",  # depends on GenericWorkload, off by default
    "PodLevelResources=false",  # InPlacePodLevelResourcesVerticalScaling (on) depends on it
    "SchedulerAsyncPreemption=maybe",
    "SchedulerAsyncPreemption",
    "NodeDeclaredFeatures=false,DynamicResourceAllocation=false",  # two errors, aggregated
]


def kube_scheduler_error(value: str) -> str:
    """kube-scheduler's own refusal of ``--feature-gates value`` (it exits before serving)."""
    done = subprocess.run(
        [str(binaries() / "kube-scheduler"), f"--feature-gates={value}"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0, done.stderr
    found = re.search(r'err="((?:[^"\\]|\\.)*)"', done.stderr)
    assert found, done.stderr
    return found.group(1).encode().decode("unicode_escape")


@pytest.mark.parametrize("value", REFUSED)
def test_refusals_read_as_kube_schedulers(value: str) -> None:
    theirs = kube_scheduler_error(value)
    with pytest.raises(InputError) as err:
        FeatureGates.parse(value)
    mine = str(err.value)
    if theirs.startswith("["):  # several errors: Go's map order decides theirs
        assert sorted(theirs[1:-1].split(", ")) == sorted(mine[1:-1].split(", "))
    else:
        assert mine == theirs


def test_every_gate_is_accepted_at_its_default() -> None:
    every = ",".join(f"{name}={str(spec[0]).lower()}" for name, spec in GATES.items())
    gates = FeatureGates.parse(every)
    assert all(gates.enabled(name) == spec[0] for name, spec in GATES.items())


def test_defaults_and_the_all_gates() -> None:
    gates = FeatureGates()
    assert gates.enabled("SchedulerAsyncPreemption") and not gates.enabled("GenericWorkload")
    beta = FeatureGates.parse("AllBeta=false")
    assert not beta.enabled("SchedulerAsyncPreemption")  # beta, unlocked: follows AllBeta
    assert beta.enabled("NodeDeclaredFeatures")  # GA: not a beta gate
    explicit = FeatureGates.parse("AllBeta=false,SchedulerPopFromBackoffQ=true")
    assert explicit.enabled("SchedulerPopFromBackoffQ") and not explicit.enabled("OpportunisticBatching")
    # alpha gates enabled with what they depend on
    alpha = FeatureGates.parse("GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
    assert alpha.enabled("TopologyAwareWorkloadScheduling")


def test_what_kubesched_does_with_each_gate() -> None:
    assert what_kubesched_does("OpportunisticBatching").startswith("followed")
    assert what_kubesched_does("APIResponseCompression") == "accepted; read by other components only"
    assert what_kubesched_does("TopologyAwareWorkloadScheduling") == "accepted; alpha, not implemented"
    assert FeatureGates.parse("GenericWorkload=true").ignored() == []  # followed (gang scheduling)
    both = FeatureGates.parse("GenericWorkload=true,DRAWorkloadResourceClaims=true")
    assert both.ignored() == ["DRAWorkloadResourceClaims"]
    assert FeatureGates.parse("SchedulerAsyncPreemption=false").ignored() == ["SchedulerAsyncPreemption"]
    assert FeatureGates.parse("SchedulerAsyncPreemption=true,APIResponseCompression=false").ignored() == []


def test_the_cli_refuses_and_warns_as_kube_scheduler_would() -> None:
    runner = CliRunner()
    locked = runner.invoke(main, ["simulate", EXAMPLE, "--feature-gates", "NodeDeclaredFeatures=false"])
    assert locked.exit_code == 2
    assert locked.output.strip().splitlines()[-1] == (
        "kubesched: error: cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true"
    )
    gates = "GenericWorkload=true,DRAWorkloadResourceClaims=true"
    warned = runner.invoke(main, ["simulate", EXAMPLE, "--feature-gates", gates])
    assert warned.exit_code == 0, warned.output
    assert "kubesched: warning: feature gate DRAWorkloadResourceClaims: accepted; not implemented yet" in warned.output
    assert "feature gate GenericWorkload" not in warned.output


def test_the_docs_table_lists_every_gate() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "feature-gates.md").read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([A-Za-z0-9]+)` \|.*$", text, re.M)}
    assert set(rows) == set(GATES)
    for name in ("OpportunisticBatching", "GenericWorkload", "NodeDeclaredFeatures"):
        assert rows[name].endswith(f"| {what_kubesched_does(name)} |")
