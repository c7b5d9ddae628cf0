"""Property: on random clusters every placement passes every filter, nothing is over-committed, and
no pod is left pending while a node could still take it (checked by brute force, in plain Python)."""

import json

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.quantity import milli_value, value
from kubesched.cli import main

ZONES = ["a", "b"]


@st.composite
def clusters(draw):
    nodes = []
    for i in range(draw(st.integers(1, 5))):
        taint = draw(st.booleans())
        nodes.append(
            {
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": {"zone": draw(st.sampled_from(ZONES))}},
                "spec": {"taints": [{"key": "t", "value": "x", "effect": "NoSchedule"}] if taint else []},
                "status": {
                    "allocatable": {
                        "cpu": f"{draw(st.integers(1, 4))}",
                        "memory": "4Gi",
                        "pods": str(draw(st.integers(1, 4))),
                    }
                },
            }
        )
    pods = []
    for j in range(draw(st.integers(1, 10))):
        spec = {
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "resources": {
                        "requests": {
                            "cpu": f"{draw(st.sampled_from([100, 500, 1000, 2500]))}m",
                            "memory": f"{draw(st.sampled_from([128, 1024, 3000]))}Mi",
                        }
                    },
                }
            ]
        }
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
        if draw(st.booleans()):
            spec["nodeSelector"] = {"zone": draw(st.sampled_from(ZONES))}
        pods.append({"kind": "Pod", "metadata": {"name": f"p{j}", "namespace": "default"}, "spec": spec})
    return nodes, pods


def fits(pod, node, used):
    spec, res = pod["spec"], pod["spec"]["containers"][0]["resources"]["requests"]
    alloc = node["status"]["allocatable"]
    if node["spec"]["taints"] and not spec.get("tolerations"):
        return False
    if any(node["metadata"]["labels"].get(k) != v for k, v in spec.get("nodeSelector", {}).items()):
        return False
    cpu, mem, count = used
    return (
        count + 1 <= int(alloc["pods"])
        and cpu + milli_value(res["cpu"]) <= milli_value(alloc["cpu"])
        and mem + value(res["memory"]) <= value(alloc["memory"])
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(clusters())
def test_placements_are_feasible_and_nothing_that_fits_is_left(tmp_path_factory, cluster) -> None:
    nodes, pods = cluster
    path = tmp_path_factory.mktemp("c") / "c.json"
    path.write_text(json.dumps({"kind": "List", "items": nodes + pods}))
    result = CliRunner().invoke(main, ["simulate", str(path), "--output", "json"])
    assert result.exit_code == 0, result.stderr
    placed = {p["name"]: p["nodeName"] for p in json.loads(result.stdout)["pods"]}
    by_name = {n["metadata"]["name"]: n for n in nodes}
    used = {n: [0, 0, 0] for n in by_name}
    for pod in pods:
        node = placed[pod["metadata"]["name"]]
        if node is None:
            continue
        assert fits(pod, by_name[node], used[node]), f"{pod['metadata']['name']} on {node} breaks a filter"
        res = pod["spec"]["containers"][0]["resources"]["requests"]
        used[node][0] += milli_value(res["cpu"])
        used[node][1] += value(res["memory"])
        used[node][2] += 1
    for pod in pods:
        if placed[pod["metadata"]["name"]] is None:
            assert not any(fits(pod, by_name[n], used[n]) for n in by_name), f"{pod['metadata']['name']} fits"
