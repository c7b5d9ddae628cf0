"""``kubesched scheduler`` as its own process against ``kubesched apiserver`` over HTTPS: pods
bound through pods/binding, FailedScheduling events (events.k8s.io/v1, reportingController
default-scheduler) and the PodScheduled=False condition, other schedulers' pods left alone, and
preemption deleting a lower-priority victim."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.live import KUBESCHED, Server, wait_for


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote")
    s = Server(root / "data", nodes=2).start()
    log = open(root / "scheduler.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [*KUBESCHED, "scheduler", "--kubeconfig", str(s.kubeconfig), "--secure-port", "0"], stdout=log, stderr=log
    )
    yield s
    proc.terminate()
    assert proc.wait(15) == 0
    s.stop()


def make_pod(name: str, cpu: str, *, priority_class: str | None = None, scheduler: str | None = None) -> dict:
    spec: dict = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
        "terminationGracePeriodSeconds": 0,
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def get_pod(s: Server, name: str) -> dict | None:
    code, body = s.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    return body if code == 200 else None


def test_binds_and_reports_failures(cluster):
    s = cluster
    for name in ("a", "b"):
        assert s.request("POST", "/api/v1/namespaces/default/pods", make_pod(name, "3"))[0] == 201
    s.request("POST", "/api/v1/namespaces/default/pods", make_pod("other", "1", scheduler="someone-else"))
    bound = wait_for(lambda: all((get_pod(s, n) or {}).get("spec", {}).get("nodeName") for n in ("a", "b")))
    assert bound
    nodes = {get_pod(s, n)["spec"]["nodeName"] for n in ("a", "b")}
    assert nodes == {"node-0", "node-1"}
    s.request("POST", "/api/v1/namespaces/default/pods", make_pod("big", "3"))
    message = (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod."
    )

    def failed() -> dict | None:
        pod = get_pod(s, "big") or {}
        conds = [c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"]
        return conds[0] if conds else None

    cond = wait_for(failed)
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", message)
    # events are sent without waiting (the scheduler's broadcaster, as upstream's)
    events = wait_for(
        lambda: s.request("GET", "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dbig")[
            1
        ]["items"]
    )
    assert [(e["reason"], e["note"], e["reportingController"]) for e in events] == [
        ("FailedScheduling", message, "default-scheduler")
    ]
    scheduled = wait_for(
        lambda: (
            (
                items := s.request("GET", "/api/v1/namespaces/default/events?fieldSelector=reason%3DScheduled")[1][
                    "items"
                ]
            )
            and len(items) == 2
            and items
        )
    )
    assert sorted(e["message"] for e in scheduled) == [
        f"Successfully assigned default/{n} to {get_pod(s, n)['spec']['nodeName']}" for n in ("a", "b")
    ]
    assert not get_pod(s, "other")["spec"].get("nodeName")


def test_preemption_through_the_api(cluster):
    s = cluster
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "urgent"}, "value": 1000}
    assert s.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc)[0] == 201
    s.request("POST", "/api/v1/namespaces/default/pods", make_pod("vip", "3", priority_class="urgent"))
    pod = wait_for(lambda: (get_pod(s, "vip") or {}).get("spec", {}).get("nodeName") and get_pod(s, "vip"), 30)
    victims = [n for n in ("a", "b") if get_pod(s, n) is None]
    assert len(victims) == 1
    events = wait_for(
        lambda: s.request("GET", "/api/v1/namespaces/default/events?fieldSelector=reason%3DPreempted")[1]["items"]
    )
    assert [e["involvedObject"]["name"] for e in events] == victims
    assert pod["spec"]["nodeName"] in ("node-0", "node-1")


def test_informer_relists_after_410_and_replays_the_difference(tmp_path, monkeypatch):
    """A watch resumed from a compacted revision gets 410; the informer relists and tells its
    subscribers what changed meanwhile (client-go's Replace), deletes included."""
    from kubesched.client import remote

    monkeypatch.setattr(remote, "RETRY", 6.0)  # reconnect after the server is back and has moved on
    s = Server(tmp_path / "data", args=["--watch-history", "3"]).start()
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 10}
    path = "/apis/scheduling.k8s.io/v1/priorityclasses"
    s.request("POST", path, {**pc, "metadata": {"name": "keep"}})
    client = remote.RemoteClient(str(s.kubeconfig), kinds=["PriorityClass"])
    try:
        current, watch = client.list_and_watch(["PriorityClass"])
        assert "keep" in {o["metadata"]["name"] for o in current["PriorityClass"]}
        s.stop()
        s.start()
        s.request("DELETE", f"{path}/keep")
        for i in range(5):
            s.request("POST", path, {**pc, "metadata": {"name": f"new-{i}"}})
        events = wait_for(lambda: (evs := watch.drain()) and len(evs) >= 6 and evs, 30)
        assert sorted((e.type, e.obj["metadata"]["name"]) for e in events) == [
            ("ADDED", f"new-{i}") for i in range(5)
        ] + [("DELETED", "keep")]
    finally:
        client.close()
        s.stop()


def test_a_second_binding_is_a_conflict_error_through_the_client(cluster):
    """What keeps two replicas from binding one pod twice: the API server refuses the second
    binding with 409, and RemoteClient turns the Status body into ApiError Conflict."""
    from kubesched.api.errors import Conflict
    from kubesched.client.remote import RemoteClient

    s = cluster
    assert s.request("POST", "/api/v1/namespaces/default/pods", make_pod("twice", "1"))[0] == 201
    pod = wait_for(lambda: (get_pod(s, "twice") or {}).get("spec", {}).get("nodeName") and get_pod(s, "twice"))
    client = RemoteClient(str(s.kubeconfig), kinds=["Node"])
    try:
        with pytest.raises(Conflict) as err:
            client.bind("default", "twice", pod["metadata"]["uid"], "node-0")
        assert err.value.code == 409
        assert 'Operation cannot be fulfilled on pods/binding "twice"' in err.value.message
    finally:
        client.close()


def test_env_lookups_stay_off_unless_a_proxy_is_set(monkeypatch):
    """kubernetes_asyncio's session would read ~/.netrc and the proxy variables on a worker thread
    per request; kubesched keeps that off unless a proxy variable asks for it."""
    import asyncio

    from kubernetes_asyncio import client as k8s

    from kubesched.client.rest import PROXY_VARIABLES, no_env_lookups

    async def session_trusts_env() -> bool:
        api = k8s.ApiClient(k8s.Configuration(host="https://127.0.0.1:1"))
        try:
            no_env_lookups(api)
            return api.rest_client.pool_manager.trust_env
        finally:
            await api.close()

    for v in PROXY_VARIABLES:
        monkeypatch.delenv(v, raising=False)
    assert asyncio.run(session_trusts_env()) is False
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert asyncio.run(session_trusts_env()) is True


def test_extended_resource_backed_by_dra_through_the_api(cluster):
    """KEP-5004 through HTTP: the scheduler creates the pod's claim (resource.k8s.io/v1), writes its
    allocation, and records it in the pod's status with a merge patch of pods/status."""
    s = cluster
    driver = "gpu.example.com"
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "xgpu"},
        "spec": {
            "extendedResourceName": "example.com/xgpu",
            "selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}],
        },
    }
    assert s.request("POST", "/apis/resource.k8s.io/v1/deviceclasses", device_class)[0] == 201
    for node in ("node-0", "node-1"):
        slice_ = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-xgpus"},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}],
            },
        }
        assert s.request("POST", "/apis/resource.k8s.io/v1/resourceslices", slice_)[0] == 201
    pod = make_pod("xgpu", "100m")
    res = pod["spec"]["containers"][0]["resources"]
    res["requests"]["example.com/xgpu"] = "1"
    res["limits"] = {"example.com/xgpu": "1"}
    assert s.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    bound = wait_for(lambda: (get_pod(s, "xgpu") or {}).get("spec", {}).get("nodeName"), 30)
    status = wait_for(lambda: (get_pod(s, "xgpu") or {}).get("status", {}).get("extendedResourceClaimStatus"))
    assert status["requestMappings"] == [
        {"containerName": "c", "resourceName": "example.com/xgpu", "requestName": "container-0-request-1"}
    ]
    code, claim = s.request(
        "GET", f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{status['resourceClaimName']}"
    )
    assert code == 200
    assert claim["metadata"]["name"].startswith("xgpu-extended-resources-")
    assert claim["status"]["allocation"]["devices"]["results"] == [
        {"request": "container-0-request-1", "driver": driver, "pool": bound, "device": "gpu-0"}
    ]


def test_every_request_waits_on_the_rate_limiter(tmp_path, monkeypatch):
    """clientConnection.qps/burst: the informers' list and watch and every write take a token
    of the client's bucket (client-go throttles each request of a clientset)."""
    from kubesched.api.errors import NotFound
    from kubesched.client import ratelimit
    from kubesched.client.remote import RemoteClient

    waits: list[float] = []
    real_wait = ratelimit.TokenBucket.wait

    async def counted(self):
        waits.append(self.qps)
        await real_wait(self)

    monkeypatch.setattr(ratelimit.TokenBucket, "wait", counted)
    s = Server(tmp_path / "data").start()
    client = RemoteClient(str(s.kubeconfig), kinds=["Node"], qps=1000.0, burst=10)
    try:
        assert client.wait_synced(10)
        wait_for(lambda: len(waits) >= 2)  # the Node list, then its watch
        assert waits == [1000.0, 1000.0]
        with pytest.raises(NotFound):
            client.bind("default", "no-such-pod", "uid", "node-0")
        assert waits == [1000.0] * 3
    finally:
        client.close()
        s.stop()


def test_a_claim_waiting_for_its_first_consumer_is_provisioned_where_the_pod_goes(cluster):
    """VolumeBinding against a remote API server: PreBind PUTs the claim with its selected node, the
    server's PV controller and hollow provisioner make and bind the volume, PreBind's poll sees it
    through the informer, and the pod is bound. The claim names no class: DefaultStorageClass
    admission gives it ``standard``, the hollow driver's, which the server creates with its nodes."""
    s = cluster
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    code, created = s.request("POST", "/api/v1/namespaces/default/persistentvolumeclaims", claim)
    assert code == 201 and created["spec"]["storageClassName"] == "standard"
    assert created["status"]["phase"] == "Pending"
    pod = make_pod("with-volume", "100m")
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    assert s.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
    node = wait_for(lambda: (get_pod(s, "with-volume") or {}).get("spec", {}).get("nodeName"), timeout=30)
    assert node in ("node-0", "node-1")
    bound = s.request("GET", "/api/v1/namespaces/default/persistentvolumeclaims/data")[1]
    assert bound["status"]["phase"] == "Bound"
    assert bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    volume = s.request("GET", f"/api/v1/persistentvolumes/{bound['spec']['volumeName']}")[1]
    assert volume["spec"]["csi"]["driver"] == "hollow.csi.kubesched.io"
    term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    csi_node = s.request("GET", f"/apis/storage.k8s.io/v1/csinodes/{node}")[1]
    assert csi_node["spec"]["drivers"][0]["allocatable"] == {"count": 32}


def test_a_custom_resource_informer_lists_and_watches_it(tmp_path):
    """``watch_custom``: the dynamic informer a plugin's custom event resource asks for, through the
    generic API; its objects arrive under the Store kind (the CRD's name), its changes as events."""
    import yaml

    from kubesched.client.remote import RemoteClient

    s = Server(tmp_path / "data").start()
    example = Path(__file__).resolve().parent.parent / "examples" / "crd"
    crd = yaml.safe_load((example / "podgroup-crd.yaml").read_text())
    group = yaml.safe_load((example / "podgroup.yaml").read_text())
    assert s.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)[0] == 201
    path = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
    assert s.request("POST", path, group)[0] == 201
    kind = "podgroups.scheduling.x-k8s.io"
    client = RemoteClient(str(s.kubeconfig), kinds=["Node"])
    try:
        client.watch_custom(kind, "scheduling.x-k8s.io", "v1alpha1", "podgroups")
        current, watch = client.list_and_watch([kind])
        assert [(o["metadata"]["name"], o["spec"]["minMember"]) for o in current[kind]] == [("training", 2)]
        assert s.request("POST", path, {**group, "metadata": {"name": "second"}})[0] == 201
        ev = wait_for(watch.pop)
        assert (ev.type, ev.kind, ev.obj["metadata"]["name"]) == ("ADDED", kind, "second")
    finally:
        client.close()
        s.stop()
