"""Discovery judged group by group against kube-apiserver v1.37.2: every group version, resource and
subresource ``kubesched apiserver`` lists, with its kind, verbs, short names and categories, is what
kube-apiserver lists with the same feature gates, but for the resources named here (each listed in
docs/cluster.md with the reason). With the default gates, scheduling.k8s.io/v1beta1 is not served
(GenericWorkload is beta and off), so a CRD's PodGroup is what ``kubectl get podgroup`` finds."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.live import Server, kubectl_binaries, temp_home, wait_for
from tests.upstream import AS_KUBESCHED, ControlPlane

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KUBECTL = kubectl_binaries().get("1.37")

# served by kube-apiserver, not (yet) by kubesched: docs/cluster.md#what-the-embedded-cluster-does-not-serve
NOT_SERVED = {
    "admissionregistration.k8s.io/v1 mutatingadmissionpolicies",
    "admissionregistration.k8s.io/v1 mutatingadmissionpolicybindings",
    "admissionregistration.k8s.io/v1 mutatingwebhookconfigurations",
    "admissionregistration.k8s.io/v1 validatingadmissionpolicies",
    "admissionregistration.k8s.io/v1 validatingadmissionpolicies/status",
    "admissionregistration.k8s.io/v1 validatingadmissionpolicybindings",
    "admissionregistration.k8s.io/v1 validatingwebhookconfigurations",
    "apiregistration.k8s.io/v1 apiservices",
    "apiregistration.k8s.io/v1 apiservices/status",
    "certificates.k8s.io/v1 certificatesigningrequests",
    "certificates.k8s.io/v1 certificatesigningrequests/approval",
    "certificates.k8s.io/v1 certificatesigningrequests/status",
    "certificates.k8s.io/v1 clustertrustbundles",
    "certificates.k8s.io/v1 podcertificaterequests",
    "certificates.k8s.io/v1 podcertificaterequests/status",
    "flowcontrol.apiserver.k8s.io/v1 flowschemas",
    "flowcontrol.apiserver.k8s.io/v1 flowschemas/status",
    "flowcontrol.apiserver.k8s.io/v1 prioritylevelconfigurations",
    "flowcontrol.apiserver.k8s.io/v1 prioritylevelconfigurations/status",
    "networking.k8s.io/v1 ipaddresses",
    "networking.k8s.io/v1 servicecidrs",
    "networking.k8s.io/v1 servicecidrs/status",
    "storage.k8s.io/v1 csinodes/status",
    "storagemigration.k8s.io/v1 storageversionmigrations",
    "storagemigration.k8s.io/v1 storageversionmigrations/status",
    "v1 nodes/proxy",
    "v1 pods/proxy",
    "v1 services/proxy",
}
# served by kubesched, by kube-apiserver only through an aggregated metrics-server: the metrics API
# `kubectl top` reads, built in (docs/cluster.md)
ADDED = {"metrics.k8s.io/v1beta1 nodes", "metrics.k8s.io/v1beta1 pods"}


def served(get: Any) -> dict[str, tuple[Any, ...]]:
    """Every ``<groupVersion> <resource>`` of the legacy and group discovery documents, with its
    kind, verbs, short names and categories."""
    out: dict[str, tuple[Any, ...]] = {}
    groups = get("/apis")["groups"]
    versions = ["v1", *sorted(v["groupVersion"] for g in groups for v in g["versions"])]
    for gv in versions:
        for r in get("/api/v1" if gv == "v1" else f"/apis/{gv}").get("resources") or []:
            out[f"{gv} {r['name']}"] = (
                r.get("kind"),
                tuple(sorted(r.get("verbs") or [])),
                tuple(r.get("shortNames") or []),
                tuple(r.get("categories") or []),
            )
    return out


@pytest.mark.parametrize(
    ("upstream_flags", "ours"),
    [((), []), (AS_KUBESCHED, ["--feature-gates", "GenericWorkload=true"])],
    ids=["default", "GenericWorkload"],
)
def test_discovery_is_kube_apiservers_group_by_group(tmp_path, upstream_flags, ours):
    plane = ControlPlane(tmp_path / "upstream", args=upstream_flags).start()
    server = Server(tmp_path / "data", args=ours).start()
    try:
        theirs = served(lambda path: plane.request("GET", path)[1])
        mine = served(lambda path: server.request("GET", path)[1])
    finally:
        server.stop()
        plane.stop()
    assert set(theirs) - set(mine) == NOT_SERVED
    assert set(mine) - set(theirs) == ADDED
    differing = {k: (theirs[k], mine[k]) for k in set(theirs) & set(mine) if theirs[k] != mine[k]}
    assert differing == {}
    gated = {k for k in theirs if k.startswith("scheduling.k8s.io/v1beta1 ")}
    assert bool(gated) is bool(upstream_flags)  # off by default, on with the gate (and runtime-config)
    assert gated <= set(mine)


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl (scripts/build_upstream.sh builds v1.37.2)")
def test_kubectl_get_podgroup_reaches_the_crds_object_under_default_flags(tmp_path):
    """scheduler-plugins' PodGroup CRD (examples/crd) under ``kubesched up``: with GenericWorkload
    off, as kube-apiserver's default, the built-in scheduling.k8s.io PodGroup is not served, so the
    short and singular names reach the CRD's object."""
    server = Server(tmp_path / "data", command="up", nodes=1).start()
    env = {**os.environ, "HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig)}

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, env=env, timeout=60)

    try:
        assert kubectl("apply", "-f", str(EXAMPLES / "crd" / "podgroup-crd.yaml")).returncode == 0
        crd = yaml.safe_load((EXAMPLES / "crd" / "podgroup-crd.yaml").read_text())["metadata"]["name"]
        wait_for(lambda: kubectl("wait", "--for=condition=Established", f"crd/{crd}").returncode == 0, 30)
        time.sleep(1)  # kubectl's discovery cache is per HOME; a fresh one sees the new group
        done = kubectl("apply", "-f", str(EXAMPLES / "crd" / "podgroup.yaml"))
        assert done.returncode == 0, done.stderr
        for name in ("podgroup", "pg", "podgroups.scheduling.x-k8s.io"):
            got = kubectl("get", name, "training", "-o", "jsonpath={.apiVersion} {.metadata.name}")
            assert got.returncode == 0, (name, got.stderr)
            assert got.stdout == "scheduling.x-k8s.io/v1alpha1 training"
    finally:
        server.stop()
