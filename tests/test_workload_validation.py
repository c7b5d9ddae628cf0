"""apps/v1 and batch/v1 validation as kube-apiserver's (``pkg/apis/apps/validation``,
``pkg/apis/batch/validation``): each malformed Deployment, ReplicaSet, StatefulSet, DaemonSet and
Job is a 422 naming the field with upstream's wording, over HTTP as a tenant sends it; a null
pointer field is defaulted (``replicas: null`` is 1) so ``kubectl get`` never fails on it; and
``simulate`` refuses the same manifests with one line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.live import Server, kubectl_binaries, temp_home

from kubesched.cli import main

TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
JOB_TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}}
BASE: dict[str, dict[str, Any]] = {
    "Deployment": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE},
    "ReplicaSet": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE},
    "StatefulSet": {"replicas": 1, "serviceName": "x", "selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE},
    "DaemonSet": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE},
    "Job": {"template": JOB_TEMPLATE},
}
PATHS = {
    "Deployment": "/apis/apps/v1/namespaces/default/deployments",
    "ReplicaSet": "/apis/apps/v1/namespaces/default/replicasets",
    "StatefulSet": "/apis/apps/v1/namespaces/default/statefulsets",
    "DaemonSet": "/apis/apps/v1/namespaces/default/daemonsets",
    "Job": "/apis/batch/v1/namespaces/default/jobs",
}
PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def manifest(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    body = copy.deepcopy(BASE[kind])
    body.update(spec)
    group = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": group, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": body}


# (kind, spec fields, the 422's causes as (field, message, reason), in kube-apiserver v1.37.2's order:
# tests/test_upstream_validation.py sends every case to it too and requires the same answer)
CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    (
        "Deployment",
        {"replicas": -1},
        [("spec.replicas", "Invalid value: -1: must be greater than or equal to 0", "FieldValueInvalid")],
    ),
    (
        "Deployment",
        {"selector": None},
        [
            ("spec.selector", "Required value", "FieldValueRequired"),
            (
                "spec.template.metadata.labels",
                'Invalid value: {"app":"x"}: `selector` does not match template `labels`',
                "FieldValueInvalid",
            ),
        ],
    ),
    (
        "Deployment",
        {"selector": {}},
        [("spec.selector", "Invalid value: {}: empty selector is invalid for deployment", "FieldValueInvalid")],
    ),
    (
        "Deployment",
        {"selector": {"matchLabels": {"app": "y"}}},
        [
            (
                "spec.template.metadata.labels",
                'Invalid value: {"app":"x"}: `selector` does not match template `labels`',
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "Deployment",
        {"selector": {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]}},
        [
            (
                "spec.selector.matchExpressions[0].operator",
                'Invalid value: "Near": not a valid selector operator',
                "FieldValueInvalid",
            ),
            (
                "spec.selector",
                'Invalid value: {"matchExpressions":[{"key":"app","operator":"Near","values":["x"]}]}: '
                "invalid label selector",
                "FieldValueInvalid",
            ),
        ],
    ),
    (
        "Deployment",
        {"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}},
        [
            (
                "spec.selector.matchExpressions[0].values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "FieldValueRequired",
            ),
            (
                "spec.selector",
                'Invalid value: {"matchExpressions":[{"key":"app","operator":"In"}]}: invalid label selector',
                "FieldValueInvalid",
            ),
        ],
    ),
    (
        "Deployment",
        {"template": None},
        [
            (
                "spec.template.metadata.labels",
                "Invalid value: null: `selector` does not match template `labels`",
                "FieldValueInvalid",
            ),
            ("spec.template.spec.containers", "Required value", "FieldValueRequired"),
        ],
    ),
    (
        "Deployment",
        {"template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}}},
        [("spec.template.spec.containers", "Required value", "FieldValueRequired")],
    ),
    (
        "Deployment",
        {
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "pause"}], "restartPolicy": "Never"},
            }
        },
        [
            (
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Never": supported values: "Always"',
                "FieldValueNotSupported",
            )
        ],
    ),
    (
        "Deployment",
        {"strategy": {"rollingUpdate": {"maxSurge": "abc"}}},
        [
            (
                "spec.strategy.rollingUpdate.maxSurge",
                f'Invalid value: "abc": {PERCENT}',
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "Deployment",
        {"strategy": {"rollingUpdate": {"maxUnavailable": "200%"}}},
        [
            (
                "spec.strategy.rollingUpdate.maxUnavailable",
                'Invalid value: "200%": must not be greater than 100%',
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "Deployment",
        {"strategy": {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}},
        [
            (
                "spec.strategy.rollingUpdate.maxUnavailable",
                "Invalid value: 0: may not be 0 when `maxSurge` is 0",
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "Deployment",
        {"strategy": {"rollingUpdate": {"maxUnavailable": -2}}},
        [
            (
                "spec.strategy.rollingUpdate.maxUnavailable",
                "Invalid value: -2: must be greater than or equal to 0",
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "Deployment",
        {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}},
        [
            (
                "spec.strategy.rollingUpdate",
                "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                "FieldValueForbidden",
            )
        ],
    ),
    (
        "Deployment",
        {"strategy": {"type": "BlueGreen"}},
        [
            (
                "spec.strategy",
                'Unsupported value: {"Type":"BlueGreen","RollingUpdate":null}: '
                'supported values: "Recreate", "RollingUpdate"',
                "FieldValueNotSupported",
            )
        ],
    ),
    (
        "Deployment",
        {"minReadySeconds": 30, "progressDeadlineSeconds": 30},
        [
            (
                "spec.progressDeadlineSeconds",
                "Invalid value: 30: must be greater than minReadySeconds",
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "Deployment",
        {"revisionHistoryLimit": -1},
        [("spec.revisionHistoryLimit", "Invalid value: -1: must be greater than or equal to 0", "FieldValueInvalid")],
    ),
    (
        "ReplicaSet",
        {"replicas": -3},
        [("spec.replicas", "Invalid value: -3: must be greater than or equal to 0", "FieldValueInvalid")],
    ),
    (
        "ReplicaSet",
        {"selector": {}},
        [("spec.selector", "Invalid value: {}: empty selector is invalid for deployment", "FieldValueInvalid")],
    ),
    (
        "StatefulSet",
        {"replicas": -1},
        [("spec.replicas", "Invalid value: -1: must be greater than or equal to 0", "FieldValueInvalid")],
    ),
    (
        "StatefulSet",
        {"podManagementPolicy": "Random"},
        [
            (
                "spec.podManagementPolicy",
                "Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "StatefulSet",
        {"updateStrategy": {"type": "Sometimes"}},
        [
            (
                "spec.updateStrategy",
                'Invalid value: {"Type":"Sometimes","RollingUpdate":null}: must be \'RollingUpdate\' or \'OnDelete\'',
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "StatefulSet",
        {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}},
        [
            (
                "spec.updateStrategy.rollingUpdate.partition",
                "Invalid value: -1: must be greater than or equal to 0",
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "StatefulSet",
        {"selector": {}},
        [("spec.selector", "Invalid value: {}: empty selector is invalid for statefulset", "FieldValueInvalid")],
    ),
    (
        "DaemonSet",
        {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "abc"}}},
        [
            (
                "spec.updateStrategy.rollingUpdate.maxUnavailable",
                f'Invalid value: "abc": {PERCENT}',
                "FieldValueInvalid",
            ),
            (
                "spec.updateStrategy.rollingUpdate.maxUnavailable",
                "Required value: cannot be 0 when maxSurge is 0",
                "FieldValueRequired",
            ),
        ],
    ),
    (
        "DaemonSet",
        {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}},
        [
            (
                "spec.updateStrategy.rollingUpdate.maxUnavailable",
                "Required value: cannot be 0 when maxSurge is 0",
                "FieldValueRequired",
            )
        ],
    ),
    (
        "DaemonSet",
        {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}},
        [
            (
                "spec.updateStrategy.rollingUpdate.maxSurge",
                "Invalid value: 1: may not be set when maxUnavailable is non-zero",
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "DaemonSet",
        {"updateStrategy": {"type": "Whenever"}},
        [
            (
                "spec.updateStrategy",
                'Unsupported value: {"Type":"Whenever","RollingUpdate":null}: '
                'supported values: "RollingUpdate", "OnDelete"',
                "FieldValueNotSupported",
            )
        ],
    ),
    (
        "Job",
        {"parallelism": -1},
        [("spec.parallelism", "Invalid value: -1: must be greater than or equal to 0", "FieldValueInvalid")],
    ),
    (
        "Job",
        {"completions": -1},
        [("spec.completions", "Invalid value: -1: must be greater than or equal to 0", "FieldValueInvalid")],
    ),
    (
        "Job",
        {"backoffLimit": -1},
        [("spec.backoffLimit", "Invalid value: -1: must be greater than or equal to 0", "FieldValueInvalid")],
    ),
    (
        "Job",
        {"completionMode": "Sometimes"},
        [
            (
                "spec.completionMode",
                'Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"',
                "FieldValueNotSupported",
            )
        ],
    ),
    (
        "Job",
        {"completionMode": "Indexed", "completions": None, "parallelism": 2},
        [("spec.completions", "Required value: when completion mode is Indexed", "FieldValueRequired")],
    ),
    (
        "Job",
        {"completionMode": "Indexed", "completions": 10, "parallelism": 200000},
        [
            (
                "spec.parallelism",
                "Invalid value: 200000: must be less than or equal to 100000 when completion mode is Indexed",
                "FieldValueInvalid",
            )
        ],
    ),
    (
        "Job",
        {"template": {"spec": {"containers": [{"name": "c", "image": "pause"}]}}},
        [
            (
                "spec.template.spec.restartPolicy",
                'Required value: valid values: "OnFailure", "Never"',
                "FieldValueRequired",
            )
        ],
    ),
    (
        "Job",
        {"template": {"spec": {"restartPolicy": "Never"}}},
        [("spec.template.spec.containers", "Required value", "FieldValueRequired")],
    ),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    srv = Server(tmp_path_factory.mktemp("validation") / "data").start()
    try:
        yield srv
    finally:
        srv.stop()


def expected_message(causes: list[tuple[str, str, str]]) -> str:
    """kube-apiserver's: one error as it is, several as the aggregate's list."""
    listed = [f"{field}: {message}" for field, message, _ in causes]
    return listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"


@pytest.mark.parametrize(("kind", "spec", "causes"), CASES, ids=[f"{c[0]}-{c[2][0][0]}" for c in CASES])
def test_a_malformed_workload_is_a_422_naming_the_field(server, kind, spec, causes):
    name = f"bad-{kind.lower()}"
    status, body = server.request("POST", PATHS[kind], manifest(kind, name, **spec))
    group = "batch" if kind == "Job" else "apps"
    assert status == 422, body
    assert body["reason"] == "Invalid" and body["details"]["kind"] == kind
    assert body["message"] == f'{kind}.{group} "{name}" is invalid: {expected_message(causes)}'
    assert body["details"]["causes"] == [{"reason": r, "message": m, "field": f} for f, m, r in causes]
    assert server.request("GET", f"{PATHS[kind]}/{name}")[0] == 404  # nothing stored


@pytest.mark.parametrize("kind", list(BASE))
def test_the_valid_base_of_each_kind_is_accepted(server, kind):
    status, body = server.request("POST", PATHS[kind], manifest(kind, f"ok-{kind.lower()}"))
    assert status == 201, body


def test_an_update_is_validated_too(server):
    assert server.request("POST", PATHS["Deployment"], manifest("Deployment", "updated"))[0] == 201
    status, body = server.request(
        "PATCH",
        f"{PATHS['Deployment']}/updated",
        {"spec": {"replicas": -5}},
        content_type="application/merge-patch+json",
    )
    assert status == 422 and body["message"].endswith(
        "spec.replicas: Invalid value: -5: must be greater than or equal to 0"
    )
    assert server.request("GET", f"{PATHS['Deployment']}/updated")[1]["spec"]["replicas"] == 1


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
def test_replicas_null_is_defaulted_to_one_and_kubectl_get_lists_it(server, kind):
    name = f"null-{kind.lower()}"
    status, body = server.request("POST", PATHS[kind], manifest(kind, name, replicas=None))
    assert status == 201 and body["spec"]["replicas"] == 1
    binaries = kubectl_binaries()
    if not binaries:
        pytest.skip("no kubectl on this machine")
    import subprocess

    binary = binaries[max(binaries, key=lambda v: int(v.split(".")[1]) if "." in v else 0)]
    out = subprocess.run(
        [binary, "get", kind.lower(), name, "-o", "json"],
        capture_output=True,
        text=True,
        env={"HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["spec"]["replicas"] == 1
    table = subprocess.run(
        [binary, "get", kind.lower()],
        capture_output=True,
        text=True,
        env={"HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert table.returncode == 0 and name in table.stdout, table.stderr


def test_simulate_refuses_a_malformed_workload_with_one_line(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(manifest("Deployment", "web", strategy={"rollingUpdate": {"maxSurge": "abc"}})))
    result = CliRunner().invoke(main, ["simulate", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        f"kubesched: error: {path}: Deployment default/web: field spec.strategy.rollingUpdate.maxSurge: "
        f'Invalid value: "abc": {PERCENT}'
    ]
