"""Hostile input to ``kubesched simulate``: every case ends in exit 2 with one line naming the
file, object and field (never a traceback or a signal), valid input is never lost, and nothing
accepted over-commits a node. Hand-written cases as a table, then hypothesis over the shapes of
manifests and configurations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.quantity import parse_quantity
from kubesched.cli import main
from kubesched.cluster import loader
from kubesched.cluster.loader import MAX_NESTING_DEPTH
from kubesched.errors import InputError

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '10'}}\n"


def pod_doc(spec: str, name: str = "p", extra_meta: str = "") -> str:
    return f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default{extra_meta}}}\nspec: {spec}\n"


def simulate(*args: str, stdin: str | None = None) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(main, ["simulate", *args], input=stdin)
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.stdout, result.stderr, exc


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if not line.startswith("kubesched: warning:")]
    assert len(lines) == 1 and lines[0].startswith("kubesched: error: "), stderr
    return lines[0]


HOSTILE = [
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause}]}", name='"[/oops]"'),
        'pods.yaml: Pod default/[/oops]: field metadata.name: Invalid value: "[/oops]": a lowercase RFC 1123',
        id="markup-name",
    ),
    pytest.param(
        NODE + pod_doc("{priorityClassName: '[/x]', containers: [{name: c, image: pause}]}"),
        'Pod default/p: field spec.priorityClassName: Invalid value: "[/x]": a lowercase RFC 1123 subdomain',
        id="markup-priority-class",
    ),
    pytest.param(
        NODE
        + pod_doc("{containers: [{name: c, image: pause, resources: {requests: {cpu: '99999999999999999999999'}}}]}"),
        "Pod default/p: field spec.containers[0].resources.requests[cpu]: "
        'Invalid value: "99999999999999999999999": must be no more than 9007199254740992m',
        id="huge-request",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '99999999999999999999999'}}\n",
        'Node n1: field status.allocatable[cpu]: Invalid value: "99999999999999999999999": must be no more than',
        id="huge-allocatable",
    ),
    pytest.param(
        NODE + pod_doc("{priority: high, containers: [{name: c, image: pause}]}"),
        "Pod default/p: field spec.priority: json: cannot unmarshal string into Go struct field "
        "PodSpec.spec.priority of type int32",
        id="priority-string",
    ),
    pytest.param(
        NODE + pod_doc("{priority: 3000000000, containers: [{name: c, image: pause}]}"),
        "field spec.priority: json: cannot unmarshal number 3000000000 into Go struct field PodSpec.spec.priority "
        "of type int32",
        id="priority-out-of-int32",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause, resources: {requests: {cpu: '-1'}}}]}"),
        'field spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        id="negative-cpu",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause, resources: {requests: {memory: -5Gi}}}]}"),
        'field spec.containers[0].resources.requests[memory]: Invalid value: "-5Gi": '
        "must be greater than or equal to 0",
        id="negative-memory",
    ),
    pytest.param(
        NODE
        + pod_doc("{containers: [{name: c, image: pause, resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]}"),
        'field spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
        id="request-above-limit",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause, resources: {requests: {example.com/gpu: '1'}}}]}"),
        "field spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
        id="extended-without-limit",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause, resources: {limits: {example.com/gpu: '0.5'}}}]}"),
        'field spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "0.5": must be an integer',
        id="fractional-extended",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause}]}", name="a" * 100_000),
        "field metadata.name: Invalid value: ",
        id="long-name",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause, requets: {cpu: '1'}}]}"),
        "Pod default/p: field spec.containers[0].requets: "
        'strict decoding error: unknown field "spec.containers[0].requets"',
        id="unknown-field",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause}]}", extra_meta=", labels: {tier: 1}"),
        "field metadata.labels[tier]: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels "
        "of type string",
        id="numeric-label",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause}]}", extra_meta=", labels: {'a b': x}"),
        'field metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters',
        id="bad-label-key",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c}]}"),
        "Pod default/p: field spec.containers[0].image: Required value",
        id="no-image",
    ),
    pytest.param(
        NODE + pod_doc("{containers: []}"),
        "Pod default/p: field spec.containers: Required value",
        id="no-containers",
    ),
    pytest.param(
        NODE + pod_doc("{containers: x}"),
        "field spec.containers: json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type "
        "[]v1.Container",
        id="containers-string",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause, resources: {requests: {cpu: [1]}}}]}"),
        "field spec.containers[0].resources.requests[cpu]: quantities must match the regular expression",
        id="quantity-list",
    ),
    pytest.param(
        NODE + pod_doc("{containers: [{name: c, image: pause, resources: {requests: {cpu: 1.5.5}}}]}"),
        "field spec.containers[0].resources.requests[cpu]: unable to parse quantity's suffix",
        id="quantity-suffix",
    ),
    pytest.param(
        NODE + "---\nkind: [1]\n",
        "pods.yaml: <document 1>: field kind: expected a string",
        id="kind-not-string",
    ),
    pytest.param(
        "kind: List\nitems: 5\n",
        "pods.yaml: <document 0>: field items: expected a list",
        id="list-items-not-list",
    ),
    pytest.param("", "kubesched: error: no Kubernetes objects found in", id="empty-file"),
    pytest.param("a: [\n", "pods.yaml: malformed YAML at line 2 column 1", id="malformed"),
    pytest.param(
        "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
        + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
        "pods.yaml: aliases expand the document past 10,000,000 nodes",
        id="billion-laughs",
    ),
    pytest.param(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: " + "[" * 200 + "]" * 200 + "\n",
        "Widget default/w: nested more than 100 levels deep",
        id="deep-unknown-kind",
    ),
]


@pytest.mark.parametrize(("text", "expected"), HOSTILE)
def test_hostile_manifest_is_one_line_and_exit_2(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(text)
    code, _out, err, exc = simulate(str(path))
    assert exc is None
    assert code == 2
    assert expected in one_error_line(err)


def test_empty_directory_says_so(tmp_path: Path) -> None:
    code, _out, err, _ = simulate(str(tmp_path))
    assert code == 2 and one_error_line(err) == f"kubesched: error: no Kubernetes objects found in {tmp_path}"


@pytest.mark.parametrize(
    ("text", "suffix", "expected"),
    [
        ("a: " + "[" * 30_000 + "]" * 30_000 + "\n", ".yaml", "nested more than 500 levels deep at line 1 column"),
        ("a: " + "[" * 700 + "]" * 700 + "\n", ".yaml", "nested more than 500 levels deep at line 1 column 503"),
        ("- " * 30_000 + "x\n", ".yaml", "nested more than 500 levels deep at line 1 column"),
        ("[" * 30_000 + "]" * 30_000, ".json", "deep.json: nested more than 500 levels deep"),
        (
            '["' + "]" * 900 + '", ' + "[" * 600 + "]" * 600 + "]",
            ".json",
            "deep.json: nested more than 500 levels deep",
        ),
    ],
    ids=["flow", "flow-under-libyaml-cap", "compact-block", "json", "json-brackets-in-strings"],
)
def test_deep_nesting_is_refused_before_the_parser_overflows(tmp_path: Path, text: str, suffix: str, expected: str):
    """In a child process: libyaml's composer overflowed the C stack here (a segfault, exit 139),
    and libyaml 0.2.6 refuses 1,000 levels with its own words; ours is one line at 500 either way."""
    path = tmp_path / f"deep{suffix}"
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "kubesched", "simulate", str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.count("\n") == 1 and expected in out.stderr


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_nesting_at_the_limit_loads(tmp_path: Path, suffix: str) -> None:
    """500 levels are a document (then refused as no Kubernetes object), whatever the parser."""
    path = tmp_path / f"limit{suffix}"
    inner = "[" * (MAX_NESTING_DEPTH - 1) + "]" * (MAX_NESTING_DEPTH - 1)
    path.write_text(f'{{"a": {inner}}}')
    code, _out, err, exc = simulate(str(path))
    assert exc is None and code == 2
    assert "expected a Kubernetes object" in one_error_line(err) or "Required value: kind" in one_error_line(err)


def test_a_parser_with_a_lower_nesting_cap_still_gets_our_message(monkeypatch) -> None:
    """A PyYAML whose libyaml refuses nesting before our limit: the same one line, at its position."""

    def capped(text, Loader):
        yield yaml.StreamStartEvent()
        raise yaml.scanner.ScannerError(
            "while increasing flow level", None, "exceeded maximum nesting depth", yaml.Mark("f", 0, 0, 7, None, None)
        )

    monkeypatch.setattr(loader.yaml, "parse", capped)
    with pytest.raises(InputError) as raised:
        loader.check_yaml_structure("a: " + "[" * 600, "f")
    assert (raised.value.file, raised.value.message) == ("f", "nested more than 500 levels deep at line 1 column 8")


def test_duplicate_object_is_rejected_with_its_namespace(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(
        NODE
        + pod_doc("{containers: [{name: c, image: pause}]}", name="dup")
        + pod_doc("{containers: [{name: c, image: pause}]}", "dup")
    )
    code, out, _err, exc = simulate(str(path), "-o", "json")
    assert exc is None and code == 0
    doc = json.loads(out)
    assert doc["rejected"] == [
        {"kind": "Pod", "namespace": "default", "name": "dup", "message": 'pods "dup" already exists'}
    ]
    code, out, _err, _ = simulate(str(path))
    assert 'rejected Pod default/dup: pods "dup" already exists' in out


def test_warn_mode_drops_unknown_fields_with_one_warning_each(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(NODE + pod_doc("{containers: [{name: c, image: pause, requets: {cpu: '1'}}]}"))
    code, out, err, exc = simulate(str(path), "--validate", "warn", "-o", "json")
    assert exc is None and code == 0
    assert err.splitlines() == [
        f'kubesched: warning: {path}: Pod default/p: unknown field "spec.containers[0].requets"'
    ]
    assert json.loads(out)["pods"][0]["nodeName"] == "n1"


def test_standard_input(tmp_path: Path) -> None:
    code, out, _err, exc = simulate("-", "-o", "json", stdin=NODE + pod_doc("{containers: [{name: c, image: pause}]}"))
    assert exc is None and code == 0
    assert json.loads(out)["pods"][0]["nodeName"] == "n1"


# -- configurations ------------------------------------------------------------------------------

CONFIG_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("foo: 1\n", 'field foo: strict decoding error: unknown field "foo"'),
        (
            "profiles:\n- plugins:\n    score:\n      enabeld: [{name: ImageLocality}]\n",
            'strict decoding error: unknown field "profiles[0].plugins.score.enabeld"',
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled: [{name: ImageLocality, wieght: 2}]\n",
            'unknown field "profiles[0].plugins.score.enabled[0].wieght"',
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n"
            "    args: {scoringStrategy: {typ: MostAllocated}}\n",
            'unknown field "profiles[0].pluginConfig[0].args.scoringStrategy.typ"',
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n"
            "    args: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, "
            "whenUnsatisfiable: DoNotSchedule, x: 1}]}\n",
            'unknown field "profiles[0].pluginConfig[0].args.defaultConstraints[0].x"',
        ),
        ("percentageOfNodesToScore: x\n", "field percentageOfNodesToScore: Invalid value: 'x': must be a number"),
    ],
    ids=["top-level", "plugin-set", "plugin-entry", "args", "args-core-type", "type"],
)
def test_configuration_is_decoded_strictly(tmp_path: Path, body: str, expected: str) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG_HEAD + body)
    manifests = tmp_path / "m.yaml"
    manifests.write_text(NODE)
    code, _out, err, exc = simulate(str(manifests), "--config", str(cfg))
    assert exc is None and code == 2
    assert expected in one_error_line(err)


def test_leader_election_section_is_warned_about_when_simulating(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG_HEAD + "leaderElection: {leaderElect: true}\n")
    manifests = tmp_path / "m.yaml"
    manifests.write_text(NODE)
    code, _out, err, _ = simulate(str(manifests), "--config", str(cfg), "--summary")
    assert code == 0
    assert err.splitlines() == [
        "kubesched: warning: leaderElection is ignored by simulate: one simulated scheduler elects no leader "
        "(kubesched scheduler does)"
    ]


# -- fuzzing -------------------------------------------------------------------------------------

QUANTITIES = st.one_of(
    st.sampled_from(["0", "1", "500m", "2", "-1", "1Gi", "-5Gi", "1.5.5", "99999999999999999999999", "1e3", "0.1m"]),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.none(),
)
RESOURCE_NAMES = st.sampled_from(["cpu", "memory", "pods", "example.com/gpu", "bogus", "hugepages-2Mi"])
JUNK = st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.none(), st.lists(st.integers(), max_size=2))


def _resource_list() -> st.SearchStrategy[Any]:
    return st.one_of(st.dictionaries(RESOURCE_NAMES, QUANTITIES, max_size=3), JUNK)


def _node(i: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"apiVersion": st.just("v1"), "kind": st.just("Node"), "metadata": st.just({"name": f"n{i}"})},
        optional={
            "status": st.fixed_dictionaries(
                {}, optional={"allocatable": _resource_list(), "capacity": _resource_list()}
            ),
            "spec": st.fixed_dictionaries({}, optional={"unschedulable": JUNK, "taints": JUNK}),
        },
    )


def _container() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["c", "d"]), "image": st.just("pause")},
            optional={
                "resources": st.fixed_dictionaries(
                    {}, optional={"requests": _resource_list(), "limits": _resource_list()}
                ),
                "requets": JUNK,
                "ports": st.one_of(JUNK, st.lists(st.fixed_dictionaries({"hostPort": JUNK, "containerPort": JUNK}))),
            },
        ),
        JUNK,
    )


def _pod(i: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("v1"),
            "kind": st.just("Pod"),
            "metadata": st.fixed_dictionaries(
                {"name": st.sampled_from([f"p{i}", f"p{i}", "[/x]", "Bad_Name", "p0"])},
                optional={"namespace": st.sampled_from(["default", "ns", "NS!"]), "labels": JUNK},
            ),
            "spec": st.fixed_dictionaries(
                {"containers": st.one_of(st.lists(_container(), max_size=2), JUNK)},
                optional={
                    "priority": JUNK,
                    "priorityClassName": st.sampled_from(["", "nope", "[/x]"]),
                    "schedulingGates": JUNK,
                    "nodeSelector": JUNK,
                    "tolerations": JUNK,
                    "overhead": _resource_list(),
                    "schedulerName": st.sampled_from(["default-scheduler", "other"]),
                },
            ),
        }
    )


def _requests_of(pod: dict[str, Any]) -> dict[str, Fraction]:
    """An independent sum of a bound pod's container requests (no init containers in this fuzz)."""
    total: dict[str, Fraction] = {}
    spec = pod.get("spec") or {}
    for c in spec.get("containers") or []:
        for name, q in (((c.get("resources") or {}).get("requests")) or {}).items():
            if q is not None:  # null is Go's zero
                total[name] = total.get(name, Fraction(0)) + parse_quantity(q)
    for name, q in (spec.get("overhead") or {}).items():
        if q is not None:
            total[name] = total.get(name, Fraction(0)) + parse_quantity(q)
    return total


def _allocatable(node: dict[str, Any]) -> dict[str, Fraction]:
    status = node.get("status") or {}
    alloc = status.get("allocatable")
    if alloc is None:
        alloc = status.get("capacity") or {}
    return {k: parse_quantity(v) for k, v in alloc.items() if v is not None}  # null is Go's zero


@settings(
    max_examples=int(os.environ.get("KUBESCHED_FUZZ_EXAMPLES", 150)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    nodes=st.integers(1, 3).flatmap(lambda n: st.tuples(*[_node(i) for i in range(n)])),
    pods=st.integers(0, 4).flatmap(lambda n: st.tuples(*[_pod(i) for i in range(n)])),
)
def test_fuzzed_manifests_exit_0_or_one_line_2_and_never_overcommit(tmp_path: Path, nodes, pods) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(yaml.safe_dump_all([*nodes, *pods]))
    code, out, err, exc = simulate(str(path), "-o", "json")
    assert exc is None, f"{type(exc).__name__}: {exc}"
    assert code in (0, 2)
    if code == 2:
        one_error_line(err)
        return
    doc = json.loads(out)
    # nothing valid is lost: every pod is listed, or rejected with a reason
    listed = {(p["namespace"], p["name"]) for p in doc["pods"]} | {
        (r["namespace"], r["name"]) for r in doc["rejected"] if r["kind"] == "Pod"
    }
    for p in pods:
        assert ((p["metadata"].get("namespace") or "default"), p["metadata"]["name"]) in listed
    # no node holds more than its allocatable
    by_name = {(p["metadata"].get("namespace") or "default", p["metadata"]["name"]): p for p in pods}
    for node in nodes:
        alloc = _allocatable(node)
        used: dict[str, Fraction] = {}
        count = 0
        for p in doc["pods"]:
            if p["nodeName"] == node["metadata"]["name"]:
                count += 1
                for name, q in _requests_of(by_name[(p["namespace"], p["name"])]).items():
                    used[name] = used.get(name, Fraction(0)) + q
        assert count <= alloc.get("pods", Fraction(0))
        for name, q in used.items():
            if q > 0 and name in ("cpu", "memory", "example.com/gpu", "hugepages-2Mi"):
                assert q <= alloc.get(name, Fraction(0)), (name, q, alloc)


CONFIG_VALUES = st.one_of(JUNK, st.dictionaries(st.sampled_from(["enabled", "disabled", "x"]), JUNK, max_size=2))


@settings(
    max_examples=int(os.environ.get("KUBESCHED_FUZZ_EXAMPLES", 100)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    top=st.dictionaries(
        st.sampled_from(
            ["percentageOfNodesToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds", "parallelism", "bogus"]
        ),
        JUNK,
        max_size=3,
    ),
    profile=st.fixed_dictionaries(
        {},
        optional={
            "schedulerName": JUNK,
            "plugins": st.dictionaries(st.sampled_from(["score", "filter", "multiPoint", "nope"]), CONFIG_VALUES),
            "pluginConfig": st.one_of(
                JUNK,
                st.lists(
                    st.fixed_dictionaries(
                        {"name": st.sampled_from(["NodeResourcesFit", "PodTopologySpread", "DefaultPreemption", "X"])},
                        optional={"args": st.one_of(JUNK, st.dictionaries(st.text(max_size=12), JUNK, max_size=2))},
                    ),
                    max_size=2,
                ),
            ),
        },
    ),
)
def test_fuzzed_configurations_exit_0_or_one_line_2(tmp_path: Path, top, profile) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(CONFIG_HEAD + yaml.safe_dump({**top, "profiles": [profile]}))
    manifests = tmp_path / "m.yaml"
    manifests.write_text(NODE + pod_doc("{containers: [{name: c, image: pause}]}"))
    code, _out, err, exc = simulate(str(manifests), "--config", str(cfg), "--summary")
    assert exc is None, f"{type(exc).__name__}: {exc}"
    assert code in (0, 2)
    if code == 2:
        one_error_line(err)


# Every field of a rich, valid cluster, any of which the fuzz below replaces with a hostile value.
RICH = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "a"}}},
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
        "preemptionPolicy": "PreemptLowerPriority",
    },
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "zone": "a"}},
        "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}], "unschedulable": False},
        "status": {
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10", "example.com/gpu": "1"},
            "images": [{"names": ["nginx:1"], "sizeBytes": 1000}],
        },
    },
    {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b", "namespace": "shop"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}},
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "shop"},
        "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]},
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "shop", "labels": {"app": "a"}},
        "spec": {
            "priorityClassName": "high",
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}
                    ],
                },
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "b"}}, "topologyKey": "kubernetes.io/hostname"}
                    ]
                },
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "a"}},
                }
            ],
            "initContainers": [{"name": "i", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
            "containers": [
                {
                    "name": "c",
                    "image": "nginx:1",
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                    "resources": {"requests": {"cpu": "500m"}, "limits": {"example.com/gpu": "1"}},
                }
            ],
            "overhead": {"cpu": "10m"},
            "schedulingGates": [],
        },
    },
]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


RICH_PATHS = [(d, p) for d, doc in enumerate(RICH) for p in _paths(doc) if p[0] not in ("apiVersion", "kind")]
HOSTILE_VALUES = st.one_of(
    JUNK,
    QUANTITIES,
    st.sampled_from(["[/x]", "-1", "", "a" * 300, "Exists", "In", "DoNotSchedule", "NoExecute", "Never", "50%"]),
    st.dictionaries(st.sampled_from(["key", "operator", "values", "matchLabels", "x"]), JUNK, max_size=3),
)


@settings(
    max_examples=int(os.environ.get("KUBESCHED_FUZZ_EXAMPLES", 150)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(mutations=st.lists(st.tuples(st.sampled_from(RICH_PATHS), HOSTILE_VALUES), min_size=1, max_size=3))
def test_fuzzed_fields_of_a_rich_cluster_exit_0_or_one_line_2(tmp_path: Path, mutations) -> None:
    docs = json.loads(json.dumps(RICH))
    for (d, path), value in mutations:
        target = docs[d]
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation replaced a parent
    out_path = tmp_path / "rich.yaml"
    out_path.write_text(yaml.safe_dump_all(docs))
    code, out, err, exc = simulate(str(out_path), "-o", "json")
    assert exc is None, f"{type(exc).__name__}: {exc}"
    assert code in (0, 2)
    if code == 2:
        one_error_line(err)
    else:
        json.loads(out)
