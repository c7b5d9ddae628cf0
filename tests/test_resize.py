"""In-place pod resize (GA since v1.35): a running pod counts the largest of its spec, what the
kubelet allocated and what it actuated, per resource; an infeasible resize leaves the spec out;
pod-level status replaces the containers' when the kubelet reports it. The cases are
component-helpers' PodRequests table in miniature, and ``tests/test_oracle_tables.py`` runs them
through upstream's scheduler."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import make_node, make_pod
from kubesched.api.pod import pod_info_from
from kubesched.errors import InputError


def status(allocated: str | None = None, actuated: str | None = None, name: str = "c") -> dict[str, Any]:
    cs: dict[str, Any] = {"name": name, "ready": True, "restartCount": 0, "image": "pause", "imageID": ""}
    if allocated is not None:
        cs["allocatedResources"] = {"cpu": allocated}
    if actuated is not None:
        cs["resources"] = {"requests": {"cpu": actuated}}
    return cs


INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
DEFERRED = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}


def running(cpu: str, *statuses: dict[str, Any], conditions: list | None = None, **extra: Any) -> dict[str, Any]:
    """A pod on node ``n``, its spec asking ``cpu``, with the kubelet's status."""
    pod = make_pod("old", cpu=cpu, node="n")
    st: dict[str, Any] = {"phase": "Running", "containerStatuses": list(statuses)}
    if conditions:
        st["conditions"] = conditions
    st.update(extra.pop("pod_status", {}))
    pod["spec"].update(extra)
    pod["status"] = st
    return pod


# (the running pod, the cpu it counts in millicores)
RESIZE_CASES = [
    pytest.param(running("1"), 1000, id="no status: the spec"),
    pytest.param(running("1", status("1", "1")), 1000, id="settled"),
    pytest.param(running("3", status("1", "1")), 3000, id="growing: the spec"),
    pytest.param(running("1", status("3", "3")), 3000, id="shrink asked: the allocation"),
    pytest.param(running("1", status("1", "3")), 3000, id="shrinking: still actuated"),
    pytest.param(running("3", status("1", "1"), conditions=[DEFERRED]), 3000, id="deferred: the spec"),
    pytest.param(running("3", status("1", "2"), conditions=[INFEASIBLE]), 2000, id="infeasible: not the spec"),
    pytest.param(running("3", conditions=[INFEASIBLE]), 0, id="infeasible without statuses: nothing"),
    pytest.param(running("1", status("2")), 2000, id="allocated, nothing actuated yet"),
    pytest.param(
        running("1", status("1", "1"), resources={"requests": {"cpu": "2"}}),
        2000,
        id="pod-level spec over the containers",
    ),
    pytest.param(
        running(
            "1",
            status("1", "1"),
            resources={"requests": {"cpu": "1"}},
            pod_status={"resources": {"requests": {"cpu": "3"}}, "allocatedResources": {"cpu": "2"}},
        ),
        3000,
        id="pod-level status",
    ),
]


@pytest.mark.parametrize(("pod", "cpu"), RESIZE_CASES)
def test_a_running_pod_counts_what_the_kubelet_holds(pod: dict[str, Any], cpu: int) -> None:
    assert pod_info_from(pod).requests.get("cpu", 0) == cpu


def test_a_sidecars_allocation_counts_as_a_sidecar() -> None:
    pod = make_pod("old", cpu="1", node="n")
    pod["spec"]["initContainers"] = [
        {"name": "side", "image": "pause", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
    ]
    pod["status"] = {"initContainerStatuses": [status("2", "2", name="side")], "containerStatuses": [status()]}
    assert pod_info_from(pod).requests["cpu"] == 3000  # app 1 + sidecar's allocation 2


def test_a_bad_status_quantity_names_its_field() -> None:
    pod = running("1", status("lots"))
    with pytest.raises(InputError) as err:
        pod_info_from(pod)
    assert err.value.field == "status.containerStatuses[0].allocatedResources[cpu]"


NODE = make_node("n", cpu="4", memory="8Gi")


def test_the_hollow_kubelet_actuates_a_resize_or_defers_it(tmp_path) -> None:
    """``kubesched up``: a running pod resized through ``pods/resize`` gets its new resources
    allocated when the node has room (and the scheduler counts them), and a resize the node cannot
    hold stays pending with the kubelet's PodResizePending condition, reason Deferred."""
    from tests.live import Server, wait_for

    server = Server(tmp_path / "data", command="up", nodes=0).start()
    pods = "/api/v1/namespaces/default/pods"
    try:
        node = make_node("n", cpu="4", memory="8Gi")
        assert server.request("POST", "/api/v1/nodes", {"apiVersion": "v1", **node})[0] == 201
        for name, cpu in (("small", "1"), ("other", "2")):
            body = make_pod(name, cpu=cpu, memory="128Mi", node="n")
            del body["metadata"]["uid"]
            assert server.request("POST", pods, {"apiVersion": "v1", **body})[0] == 201

        def status_of(name: str) -> dict[str, Any]:
            return server.request("GET", f"{pods}/{name}")[1].get("status") or {}

        wait_for(lambda: status_of("small").get("phase") == "Running" and status_of("other").get("phase") == "Running")
        assert status_of("small")["containerStatuses"][0]["allocatedResources"] == {"cpu": "1", "memory": "128Mi"}

        def resize(cpu: str) -> int:
            patch = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}
            code, _ = server.request(
                "PATCH", f"{pods}/small/resize", patch, content_type="application/strategic-merge-patch+json"
            )
            return code

        assert resize("1500m") == 200  # 1.5 + 2 of 4: room
        wait_for(lambda: status_of("small")["containerStatuses"][0]["allocatedResources"]["cpu"] == "1500m")
        assert resize("3") == 200  # 3 + 2 of 4: no room
        pending = wait_for(
            lambda: next(
                (c for c in status_of("small").get("conditions") or [] if c["type"] == "PodResizePending"), None
            )
        )
        assert pending["reason"] == "Deferred"
        assert (
            pending["message"] == "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"
        )
        assert status_of("small")["containerStatuses"][0]["allocatedResources"]["cpu"] == "1500m"
        # the scheduler counts the larger of spec and allocation: 3 + 2 of 4 leaves no room for 0.5
        late = make_pod("late", cpu="500m")
        del late["metadata"]["uid"]
        assert server.request("POST", pods, {"apiVersion": "v1", **late})[0] == 201
        message = wait_for(
            lambda: next(
                (c.get("message") for c in status_of("late").get("conditions") or [] if c["type"] == "PodScheduled"),
                None,
            )
        )
        assert message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    finally:
        server.stop()
