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
from kubesched.scheduler.profile import build_profiles

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
        profiles = build_profiles(parse_config(yaml.safe_load((FIXTURES / fixture).read_text())))
        assert "NodeResourcesFit" in next(iter(profiles.values())).plugins


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


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KUBESCHED, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", ["", *sorted(p.name for p in FIXTURES.glob("*.yaml"))])
def test_config_defaults_is_complete_valid_and_a_fixed_point(tmp_path, name):
    first = _cli("config", "defaults", *([str(FIXTURES / name)] if name else []))
    assert first.returncode == 0, first.stderr
    doc = yaml.safe_load(first.stdout)
    assert doc["leaderElection"]["leaseDuration"] == "15s" or name
    assert doc["clientConnection"]["contentType"] == "application/vnd.kubernetes.protobuf"
    args = {pc["name"]: pc["args"] for pc in doc["profiles"][0]["pluginConfig"]}
    assert args["DefaultPreemption"]["minCandidateNodesAbsolute"] == 100
    assert args["NodeResourcesFit"]["kind"] == "NodeResourcesFitArgs"
    (tmp_path / "d.yaml").write_text(first.stdout)
    assert _cli("config", "validate", str(tmp_path / "d.yaml")).returncode == 0
    assert _cli("config", "defaults", str(tmp_path / "d.yaml")).stdout == first.stdout


def test_config_defaults_fill_what_a_file_leaves_out():
    doc = yaml.safe_load(_cli("config", "defaults", str(FIXTURES / "most-allocated.yaml")).stdout)
    fit = {pc["name"]: pc["args"] for pc in doc["profiles"][0]["pluginConfig"]}["NodeResourcesFit"]
    assert fit["scoringStrategy"]["type"] == "MostAllocated"
    assert [r["name"] for r in fit["scoringStrategy"]["resources"]] == [
        "cpu",
        "memory",
        "intel.com/foo",
        "intel.com/bar",
    ]
    weights = {p["name"]: p.get("weight", 0) for p in doc["profiles"][0]["plugins"]["multiPoint"]["enabled"]}
    assert weights["TaintToleration"] == 3 and weights["NodeAffinity"] == 2 and weights["VolumeBinding"] == 0


def test_config_validate_builds_the_plugins_and_their_args(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercentage: 200}}]\n"
    )
    out = _cli("config", "validate", str(bad))
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"kubesched: error: {bad}: KubeSchedulerConfiguration: field "
        "profiles[0].pluginConfig[DefaultPreemption].args.minCandidateNodesPercentage: "
        "Invalid value: 200: not in valid range [0, 100]"
    )


def test_fields_read_but_not_acted_on_are_warned_about_not_ignored(tmp_path):
    # qps and burst limit kubesched scheduler's requests: no warning for them
    out = _cli("config", "validate", str(FIXTURES / "extenders-and-leader-election.yaml"))
    assert out.returncode == 0
    assert out.stderr == ""
    content = tmp_path / "content.yaml"
    content.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "clientConnection: {qps: 20, contentType: application/json, acceptContentTypes: application/json}\n"
    )
    out = _cli("config", "validate", str(content))
    assert out.returncode == 0
    assert out.stderr.splitlines() == [
        f"kubesched: warning: {content}: clientConnection.{key} is read but kubesched does not act on it yet"
        for key in ("contentType", "acceptContentTypes")
    ]


def test_volume_binding_args_of_a_dumped_configuration_are_used_and_validated(tmp_path):
    head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
    dumped = tmp_path / "dumped.yaml"  # what kube-scheduler --write-config-to writes has VolumeBinding's args
    dumped.write_text(head + "- pluginConfig: [{name: VolumeBinding, args: {bindTimeoutSeconds: 600}}]\n")
    out = _cli("config", "validate", str(dumped))
    assert (out.returncode, out.stderr) == (0, "")
    negative = tmp_path / "negative.yaml"
    negative.write_text(head + "- pluginConfig: [{name: VolumeBinding, args: {bindTimeoutSeconds: -1}}]\n")
    out = _cli("config", "validate", str(negative))
    assert out.returncode == 2
    assert "profiles[0].pluginConfig[VolumeBinding].args.bindTimeoutSeconds" in out.stderr
    assert "invalid BindTimeoutSeconds, should not be a negative value" in out.stderr
