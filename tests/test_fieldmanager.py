"""Field ownership without a server: field sets and their FieldsV1 form, path strings as
structured-merge-diff prints them, conflict messages as kube-apiserver words them, and what an
applier's omission removes."""

from __future__ import annotations

import pytest

from kubesched.api.errors import Conflict
from kubesched.apiserver.handlers import fieldmanager as fm

DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d", "labels": {"app": "d"}, "uid": "u", "resourceVersion": "3"},
    "spec": {
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}},
    },
    "status": {"replicas": 2},
}


def test_field_set_and_fields_v1_round_trip():
    paths = fm.field_set(DEPLOY)
    assert ("f:metadata", "f:labels", "f:app") in paths
    assert ("f:spec", "f:replicas") in paths
    item = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"c"}')
    assert (*item, ".") in paths and (*item, "f:image") in paths
    assert (*item, "f:ports", 'k:{"containerPort":80}', "f:containerPort") in paths  # ports merge by containerPort
    assert (*item, "f:image") in paths and (*item, "f:ports") not in paths
    assert not any(p[0] in ("f:status", "f:apiVersion") or p[:2] == ("f:metadata", "f:uid") for p in paths)
    assert fm.from_fields_v1(fm.to_fields_v1(paths)) == paths


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("f:spec", "f:replicas"), ".spec.replicas"),
        (("f:spec", "f:containers", 'k:{"name":"c"}', "f:image"), '.spec.containers[name="c"].image'),
        (("f:metadata", "f:finalizers", 'v:"x"'), '.metadata.finalizers[="x"]'),
    ],
)
def test_path_strings(path, text):
    assert fm.path_string(path) == text


def test_conflicts_with_several_managers_are_listed_by_manager():
    live = fm.update(None, DEPLOY, "kubectl-create", "apps/v1", "2026-01-01T00:00:00Z")
    live = fm.apply(
        live,
        live,
        {"metadata": {"name": "d"}, "spec": {"paused": False}},
        "other",
        "apps/v1",
        "2026-01-01T00:00:00Z",
        force=False,
        kind_plural="deployments",
    )
    config = {"spec": {"replicas": 5, "paused": True}}
    with pytest.raises(Conflict) as err:
        fm.apply(live, live, config, "ci", "apps/v1", "t", force=False, kind_plural="deployments")
    assert err.value.message == (
        "Apply failed with 2 conflicts: "
        'conflicts with "kubectl-create" using apps/v1:\n- .spec.replicas\n'
        'conflicts with "other":\n- .spec.paused'
    )
    causes = err.value.details["causes"]
    assert {(c["field"], c["reason"]) for c in causes} == {
        (".spec.replicas", "FieldManagerConflict"),
        (".spec.paused", "FieldManagerConflict"),
    }


def test_an_applier_that_stops_applying_a_field_removes_it_unless_shared():
    first = fm.apply(
        {}, {"spec": {"a": 1, "b": 2}}, {"spec": {"a": 1, "b": 2}}, "m", "v1", "t", force=False, kind_plural="x"
    )
    merged = {**first, "spec": {"a": 1, "b": 2}}
    second = fm.apply(first, merged, {"spec": {"a": 1}}, "m", "v1", "t", force=False, kind_plural="x")
    assert second["spec"] == {"a": 1}
    shared = fm.apply(first, first, {"spec": {"b": 2}}, "n", "v1", "t", force=False, kind_plural="x")
    third = fm.apply(shared, shared, {"spec": {"a": 1}}, "m", "v1", "t", force=False, kind_plural="x")
    assert third["spec"] == {"a": 1, "b": 2}  # n still applies b
