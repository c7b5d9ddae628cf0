"""``api.schema``: decoding against the Go types as kube-apiserver's JSON decoder does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kubesched.api import schema


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        (
            "{spec: {priority: high}}",
            "spec.priority",
            "json: cannot unmarshal string into Go struct field PodSpec.spec.priority of type int32",
        ),
        (
            "{spec: {priority: 1.5}}",
            "spec.priority",
            "cannot unmarshal number 1.5 into Go struct field PodSpec.spec.priority of type int32",
        ),
        (
            "{spec: {containers: x}}",
            "spec.containers",
            "cannot unmarshal string into Go struct field PodSpec.spec.containers of type []v1.Container",
        ),
        ("{spec: x}", "spec", "cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec"),
        (
            "{metadata: {labels: {a: 1}}}",
            "metadata.labels[a]",
            "cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            "{spec: {containers: [{ports: [{protocol: 5}]}]}}",
            "spec.containers[0].ports[0].protocol",
            "cannot unmarshal number into Go struct field ContainerPort.spec.containers.ports.protocol "
            "of type v1.Protocol",
        ),
        (
            "{spec: {containers: [{ports: [{containerPort: 99999999999}]}]}}",
            "spec.containers[0].ports[0].containerPort",
            "cannot unmarshal number 99999999999 into Go struct field "
            "ContainerPort.spec.containers.ports.containerPort of type int32",
        ),
        (
            "{spec: {hostNetwork: 'yes'}}",
            "spec.hostNetwork",
            "cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool",
        ),
        ("{spec: {overhead: {cpu: {a: 1}}}}", "spec.overhead[cpu]", "quantities must match the regular expression"),
    ],
)
def test_wrong_types_get_gos_unmarshal_message(doc: str, field: str, message: str) -> None:
    with pytest.raises(schema.DecodeError) as err:
        schema.decode("core.Pod", yaml.safe_load(doc))
    assert err.value.field == field and message in err.value.message


def test_unknown_fields_are_listed_and_dropped_and_the_rest_kept() -> None:
    obj = yaml.safe_load(
        "{metadata: {name: a, creationTimestamp: 2024-01-01T00:00:00Z}, spec: {nodeSelectr: {}, "
        "containers: [{name: c, imagee: x, ports: [null]}], $setElementOrder/containers: []}}"
    )
    out, unknown = schema.decode("core.Pod", obj)
    assert unknown == ["spec.nodeSelectr", "spec.containers[0].imagee"]
    assert out == {
        "metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c", "ports": [{}]}], "$setElementOrder/containers": []},
    }
    assert obj["spec"]["containers"][0]["imagee"] == "x"  # the input is not modified


def test_a_valid_object_decodes_to_itself() -> None:
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": 4}}}
    out, unknown = schema.decode("core.Node", obj)
    assert out is obj and unknown == []


def test_free_form_values_are_bounded() -> None:
    deep: object = []
    for _ in range(150):
        deep = [deep]
    with pytest.raises(schema.DecodeError, match="nested more than 100 levels deep"):
        schema.decode("core.Pod", {"metadata": {"managedFields": [{"fieldsV1": deep}]}})


# alpha fields the installed client library still has and v1.37's API no longer does: kube-apiserver
# v1.37.2 refuses them too (NodeAllocatableResourceClaimStatus was reshaped into mapping/overhead)
GONE_IN_V1_37 = {("core.NodeAllocatableResourceClaimStatus", "resources")}


@pytest.mark.parametrize(
    "kind",
    [
        "core.Pod",
        "core.Node",
        "core.Namespace",
        "core.Service",
        "apps.StatefulSet",
        "policy.PodDisruptionBudget",
        "scheduling.PriorityClass",
        "coordination.Lease",
        "events.Event",
        "core.Binding",
    ],
)
def test_the_schema_knows_every_field_the_client_library_sends(kind: str) -> None:
    """schema.json is generated from k8s.io/api (scripts/gen_api_schema.py); kubernetes_asyncio's
    models are generated from the same API: every field a model can send, in every struct it
    reaches, must be known, or the strict decoder would refuse what real clients write."""
    from kubernetes_asyncio.client import models

    types = json.loads((Path(schema.__file__).with_name("schema.json")).read_text())["types"]
    prefix = {"events": "EventsV1", "core": "V1"}.get(kind.split(".")[0], "V1")
    seen: set[str] = set()
    todo = [(kind, f"{prefix}{kind.split('.', 1)[1]}")]
    while todo:
        key, model = todo.pop()
        if key in seen or not hasattr(models, model):
            continue
        seen.add(key)
        cls = getattr(models, model)
        fields = types[key]
        for attr, jname in cls.attribute_map.items():
            if (key, jname) in GONE_IN_V1_37:
                continue
            assert jname in fields, f"{key} lacks {jname}"
            typ, mtype = fields[jname], cls.openapi_types[attr]
            inner_schema = typ.removeprefix("[]").removeprefix("map[string]")
            inner_model = mtype.removeprefix("list[").removesuffix("]")
            if "." in inner_schema and hasattr(models, inner_model):
                todo.append((inner_schema, inner_model))
    assert len(seen) > 3
