"""``kubesched explain POD`` against a live cluster, and the results written by ``kubesched
scheduler --write-results`` against ``kubesched apiserver``: the same annotations as in process,
carried by the binding, and nothing written without the flag."""

from __future__ import annotations

import json
import subprocess

import pytest
from tests.live import KUBESCHED, Server, wait_for

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"


def make_pod(name: str, cpu: str) -> dict:
    spec = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def get_pod(s: Server, name: str) -> dict:
    code, body = s.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    assert code == 200
    return body


def explain(s: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBESCHED, "explain", *args, "--kubeconfig", str(s.kubeconfig)], capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("explain") / "data", command="up", nodes=3).start()
    yield s
    s.stop()


def test_explain_prints_the_results_on_the_pod(up: Server) -> None:
    assert up.request("POST", "/api/v1/namespaces/default/pods", make_pod("fits", "1"))[0] == 201
    assert up.request("POST", "/api/v1/namespaces/default/pods", make_pod("too-big", "64"))[0] == 201
    node = wait_for(lambda: get_pod(up, "fits")["spec"].get("nodeName"))
    wait_for(lambda: PREFIX + "filter-result" in (get_pod(up, "too-big")["metadata"].get("annotations") or {}))
    r = explain(up, "default/fits", "-o", "json")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    anns = get_pod(up, "fits")["metadata"]["annotations"]
    assert shown["selected-node"] == node == anns[PREFIX + "selected-node"]
    assert shown["finalscore-result"] == json.loads(anns[PREFIX + "finalscore-result"])
    r = explain(up, "too-big")  # the namespace defaults to default
    assert r.returncode == 0, r.stderr
    assert "from the results on the pod" in r.stdout and "selected: none" in r.stdout
    assert r.stdout.count("NodeResourcesFit: Insufficient cpu") == 3


def test_a_dry_cycle_agrees_with_the_results(up: Server) -> None:
    wait_for(lambda: get_pod(up, "too-big")["metadata"].get("annotations"))
    r = explain(up, "default/too-big", "--dry-run", "-o", "json")
    assert r.returncode == 0, r.stderr
    dry = json.loads(r.stdout)
    anns = get_pod(up, "too-big")["metadata"]["annotations"]
    assert dry["filter-result"] == json.loads(anns[PREFIX + "filter-result"])
    assert dry["selected-node"] == ""
    r = explain(up, "default/fits", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "a dry scheduling cycle" in r.stdout


def test_an_unknown_pod_is_one_line_and_exit_2(up: Server) -> None:
    r = explain(up, "default/nope")
    assert r.returncode == 2
    assert r.stderr.strip() == 'kubesched: error: pods "nope" not found in namespace "default"'
    assert r.stdout == ""


def test_the_scheduler_writes_results_only_when_asked(tmp_path) -> None:
    s = Server(tmp_path / "data", nodes=2).start()
    procs = []
    try:
        for flags in ([], ["--write-results", "--results-node-limit", "1"]):
            log = open(tmp_path / f"scheduler{len(procs)}.log", "wb")  # noqa: SIM115
            name = "with" if flags else "without"
            config = tmp_path / f"{name}.yaml"
            config.write_text(
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                f"leaderElection: {{leaderElect: false}}\nprofiles:\n- schedulerName: {name}\n"
            )
            args = ["scheduler", "--kubeconfig", str(s.kubeconfig), "--secure-port", "0", "--config", str(config)]
            procs.append(subprocess.Popen([*KUBESCHED, *args, *flags], stdout=log, stderr=log))
        for name in ("with", "without"):
            pod = make_pod(name, "1")
            pod["spec"]["schedulerName"] = name
            assert s.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
        for name in ("with", "without"):
            wait_for(lambda name=name: get_pod(s, name)["spec"].get("nodeName"), timeout=30)
        without = get_pod(s, "without")["metadata"].get("annotations") or {}
        assert not any(k.startswith(PREFIX) for k in without)
        anns = get_pod(s, "with")["metadata"]["annotations"]
        assert anns[PREFIX + "selected-node"] == get_pod(s, "with")["spec"]["nodeName"]
        assert json.loads(anns[PREFIX + "bind-result"]) == {"DefaultBinder": "success"}
        # the limit of one node: the selected node listed, the other counted as passed
        assert list(json.loads(anns[PREFIX + "filter-result"])) == [anns[PREFIX + "selected-node"]]
        groups = json.loads(anns["kubesched.io/filter-result-groups"])
        assert [(g["reason"], g["nodes"]) for g in groups] == [("passed", 1)]
    finally:
        for p in procs:
            p.terminate()
            p.wait(15)
        s.stop()


@pytest.mark.parametrize(("priority", "selected"), [(0, ""), (1000, ""), (2000, "n1")])
def test_a_dry_cycle_counts_pods_nominated_to_a_node(priority: int, selected: str) -> None:
    """A preemptor nominated to n1 (priority 1000, 3 of its 4 CPUs) is held there by the
    nominator: a pod of lower or equal priority asking 2 CPUs does not fit there, one of higher
    priority does (``addGENominatedPods`` adds the nominated pods of greater or equal priority)."""
    from kubesched.app.explain import dry_run
    from kubesched.scheduler.config import default_config

    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    node = {"metadata": {"name": "n1", "uid": "u-n1"}, "status": {"allocatable": alloc, "capacity": alloc}}
    preemptor = make_pod("preemptor", "3")
    preemptor["metadata"] |= {"namespace": "default", "uid": "u-p"}
    preemptor["spec"]["priority"] = 1000
    preemptor["status"] = {"phase": "Pending", "nominatedNodeName": "n1"}
    target = make_pod("target", "2")
    target["metadata"] |= {"namespace": "default", "uid": "u-t"}
    target["spec"]["priority"] = priority
    out = dry_run(target, {"Node": [node], "Pod": [preemptor, target]}, default_config())
    assert out is not None
    assert out["selected-node"] == selected
    if not selected:
        assert out["filter-result"]["n1"]["NodeResourcesFit"] == "Insufficient cpu"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            {"schedulerName": "gpu-scheduler"},
            'it is for scheduler "gpu-scheduler", and no profile of the configuration is (default-scheduler)',
        ),
        (
            {"schedulingGates": [{"name": "example.com/quota"}, {"name": "example.com/review"}]},
            "it is held by its scheduling gates (example.com/quota, example.com/review)",
        ),
    ],
)
def test_a_dry_cycle_that_never_tries_the_pod_says_why(change: dict, why: str) -> None:
    from kubesched.app.explain import dry_run
    from kubesched.errors import InputError
    from kubesched.scheduler.config import default_config

    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    node = {"metadata": {"name": "n1", "uid": "u-n1"}, "status": {"allocatable": alloc, "capacity": alloc}}
    target = make_pod("target", "1")
    target["metadata"] |= {"namespace": "default", "uid": "u-t"}
    target["spec"] |= change
    with pytest.raises(InputError) as err:
        dry_run(target, {"Node": [node], "Pod": [target]}, default_config())
    assert str(err.value) == f"pod default/target: the dry cycle did not reach a scheduling attempt: {why}"


def test_a_dry_cycle_held_by_a_preenqueue_plugin_names_it() -> None:
    """A pod whose ResourceClaim does not exist never leaves the queue: DynamicResources'
    PreEnqueue holds it, and the message says so with the plugin's reason."""
    from kubesched.app.explain import dry_run
    from kubesched.errors import InputError
    from kubesched.scheduler.config import default_config

    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    node = {"metadata": {"name": "n1", "uid": "u-n1"}, "status": {"allocatable": alloc, "capacity": alloc}}
    target = make_pod("target", "1")
    target["metadata"] |= {"namespace": "default", "uid": "u-t"}
    target["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "missing"}]
    with pytest.raises(InputError) as err:
        dry_run(target, {"Node": [node], "Pod": [target]}, default_config())
    assert "the dry cycle did not reach a scheduling attempt: PreEnqueue plugin DynamicResources holds it: " in str(
        err.value
    )
    assert "missing" in str(err.value)
