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
