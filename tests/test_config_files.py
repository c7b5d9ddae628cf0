"""Configuration files written for upstream load unchanged (the shapes of the kube-scheduler
documentation's examples, as fixtures), ``kubesched config validate`` answers as kube-scheduler would,
and fields KubeSchedulerConfiguration v1 does not have are refused, not ignored."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from tests.live import KUBESCHED

from kubesched.errors import InputError
from kubesched.scheduler.config import parse_config
from kubesched.scheduler.scheduler import Scheduler

FIXTURES = Path(__file__).parent / "fixtures" / "configs"


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.yaml")))
def test_upstream_shaped_configurations_load(name):
    out = subprocess.run([*KUBESCHED, "config", "validate", str(FIXTURES / name)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"{FIXTURES / name}: valid")


def test_what_the_fixtures_configure():
    cfg = parse_config(yaml.safe_load((FIXTURES / "extenders-and-leader-election.yaml").read_text()))
    assert (cfg.client_connection.qps, cfg.client_connection.burst) == (100, 200)
    assert (cfg.leader_election.lease_duration, cfg.leader_election.retry_period) == (30, 4)
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (32, 20)
    assert cfg.extenders[0].http_timeout == 10 and cfg.extenders[0].ignorable
    assert cfg.profiles[0].plugin_config["NodeResourcesFit"]["ignoredResources"] == ["example.com/gpu"]
    multi = parse_config(yaml.safe_load((FIXTURES / "multiple-profiles.yaml").read_text()))
    assert [p.scheduler_name for p in multi.profiles] == ["default-scheduler", "no-scoring-scheduler"]
    # the profiles build (their plugins and args are accepted by the framework)
    for fixture in ("most-allocated.yaml", "requested-to-capacity-ratio.yaml", "added-affinity.yaml"):
        Scheduler(_NoClient(), parse_config(yaml.safe_load((FIXTURES / fixture).read_text())), None)  # type: ignore[arg-type]


class _NoClient:
    """The profiles are built without touching a cluster."""


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        ({"profile": []}, "profile", 'strict decoding error: unknown field "profile"'),
        ({"profiles": [{"schedulerNme": "x"}]}, "profiles[0].schedulerNme", 'unknown field "profiles[0].schedulerNme"'),
        ({"clientConnection": {"qsp": 5}}, "clientConnection.qsp", 'unknown field "clientConnection.qsp"'),
        ({"clientConnection": {"burst": 1.5}}, "clientConnection.burst", "expected an integer"),
        ({"enableProfiling": "yes"}, "enableProfiling", "expected true or false"),
        ({"healthzBindAddress": "0.0.0.0:10251"}, "healthzBindAddress", "unknown field"),
    ],
)
def test_fields_v1_does_not_have_are_refused(doc, field, message):
    with pytest.raises(InputError) as err:
        parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **doc})
    assert err.value.field == field and message in err.value.message
