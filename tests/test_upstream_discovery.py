"""Discovery and OpenAPI judged group by group against kube-apiserver v1.37.2: every group version,
resource and subresource ``kubesched apiserver`` lists, with its kind, verbs, short names and
categories, is what kube-apiserver lists with the same feature gates, but for the resources named
here (each listed in docs/cluster.md with the reason); ``/openapi/v2`` and every ``/openapi/v3``
document are kube-apiserver's without those resources' paths, a CRD's included, and ``kubectl
explain`` reads the same. With the default gates, scheduling.k8s.io/v1beta1 is not served
(GenericWorkload is beta and off), so a CRD's PodGroup is what ``kubectl get podgroup`` finds."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.live import Server, kubectl_binaries, temp_home, wait_for
from tests.upstream import AS_KUBESCHED, ControlPlane

from kubesched.apiserver.openapi.prune import keep_paths, resource_of

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
# documented by kube-apiserver's OpenAPI, not served here: its log files and the service account
# issuer's discovery (docs/cluster.md)
NOT_SERVED_PATHS = ("/logs/", "/.well-known/", "/openid/")


AGGREGATED = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}
PODGROUP_CRD = yaml.safe_load((EXAMPLES / "crd" / "podgroup-crd.yaml").read_text())
# a cluster-scoped CRD with what publishing a schema changes: a kind starting with a vowel ("an"),
# int-or-string, nullable, defaults, embedded and preserved objects, CEL rules, selectable fields,
# the scale subresource; its key order in the document is what kube-openapi writes
SHAPES_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "instances.shapes.example.com"},
    "spec": {
        "group": "shapes.example.com",
        "scope": "Cluster",
        "names": {"kind": "Instance", "plural": "instances", "shortNames": ["inst"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "selectableFields": [{"jsonPath": ".spec.size"}],
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "description": "An instance of every schema shape.",
                        "required": ["spec"],
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "x-kubernetes-validations": [
                                    {"message": "too big", "rule": "self.replicas <= 10", "reason": "FieldValueInvalid"}
                                ],
                                "properties": {
                                    "replicas": {"type": "integer", "format": "int32", "default": 1, "minimum": 0},
                                    "size": {"type": "string", "enum": ["small", "large"], "nullable": True},
                                    "port": {"x-kubernetes-int-or-string": True},
                                    "template": {
                                        "type": "object",
                                        "x-kubernetes-embedded-resource": True,
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                    "labels": {
                                        "type": "object",
                                        "additionalProperties": {"type": "string"},
                                        "maxProperties": 8,
                                    },
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {"name": {"type": "string", "maxLength": 15}},
                                        },
                                    },
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


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


def documents(get: Any, leave_out: set[str]) -> dict[str, Any]:
    """The discovery documents whole, in their order: ``/apis``, each group version's
    ``APIResourceList`` and the aggregated ``/api`` and ``/apis``, without the resources named in
    ``leave_out`` (and a group or version left with none)."""
    docs: dict[str, Any] = {}
    groups = []
    for group in get("/apis")["groups"]:
        versions = []
        for v in group["versions"]:
            listed = get(f"/apis/{v['groupVersion']}")
            listed["resources"] = [
                r for r in listed["resources"] if f"{v['groupVersion']} {r['name']}" not in leave_out
            ]
            if listed["resources"]:
                docs[v["groupVersion"]] = listed
                versions.append(v)
        if versions:
            groups.append({**group, "versions": versions})
    docs["/apis"] = groups
    core = get("/api/v1")
    core["resources"] = [r for r in core["resources"] if f"v1 {r['name']}" not in leave_out]
    docs["v1"] = core
    for root in ("/api", "/apis"):
        items = []
        for group in get(root, AGGREGATED)["items"]:
            name = group["metadata"].get("name", "")
            versions = []
            for v in group["versions"]:
                gv = f"{name}/{v['version']}" if name else v["version"]
                kept = []
                for r in v["resources"]:
                    if f"{gv} {r['resource']}" in leave_out:
                        continue
                    subs = [
                        s
                        for s in r.get("subresources") or []
                        if f"{gv} {r['resource']}/{s['subresource']}" not in leave_out
                    ]
                    kept.append(
                        {**r, "subresources": subs} if subs else {k: x for k, x in r.items() if k != "subresources"}
                    )
                if kept:
                    versions.append({**v, "resources": kept})
            if versions:
                items.append({**group, "versions": versions})
        docs[f"aggregated {root}"] = items
    return docs


def api_resources(kubectl: Any, leave_out: set[str]) -> list[str]:
    """``kubectl api-resources -o wide``, a line per resource, without those named in ``leave_out``."""
    lines = kubectl("api-resources", "-o", "wide").stdout.splitlines()
    rows = [line.split() for line in lines[1:]]
    keep = [
        line for line, row in zip(lines[1:], rows, strict=True) if not any(f"{gv} {row[0]}" in leave_out for gv in row)
    ]
    return [" ".join(line.split()) for line in [lines[0], *keep]]


def _get(request: Any) -> Any:
    def get(path: str, headers: dict[str, str] | None = None) -> Any:
        code, body = request("GET", path, headers=headers)
        assert code == 200, (path, body)
        return body

    return get


@pytest.mark.parametrize(
    ("upstream_flags", "ours"),
    [((), []), (AS_KUBESCHED, ["--feature-gates", "GenericWorkload=true"])],
    ids=["default", "GenericWorkload"],
)
def test_discovery_is_kube_apiservers_group_by_group(tmp_path, upstream_flags, ours):
    """Each side with scheduler-plugins' PodGroup CRD and SHAPES_CRD installed: their groups placed as
    kube-aggregator places a CRD's, their resources hashed by their storage version, their OpenAPI
    documents byte for byte kube-apiserver's."""
    plane = ControlPlane(tmp_path / "upstream", args=upstream_flags).start()
    server = Server(tmp_path / "data", args=ours).start()
    try:
        for request in (plane.request, server.request):
            for crd in (PODGROUP_CRD, SHAPES_CRD):
                assert request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)[0] == 201
        for request in (plane.request, server.request):
            wait_for(
                lambda r=request: all(
                    gv in r("GET", "/openapi/v3")[1]["paths"]
                    for gv in ("apis/scheduling.x-k8s.io/v1alpha1", "apis/shapes.example.com/v1")
                ),
                30,
            )
        theirs_get, mine_get = _get(plane.request), _get(server.request)
        theirs, mine = served(theirs_get), served(mine_get)
        assert set(theirs) - set(mine) == NOT_SERVED
        assert set(mine) - set(theirs) == ADDED
        differing = {k: (theirs[k], mine[k]) for k in set(theirs) & set(mine) if theirs[k] != mine[k]}
        assert differing == {}
        gated = {k for k in theirs if k.startswith("scheduling.k8s.io/v1beta1 ")}
        assert bool(gated) is bool(upstream_flags)  # off by default, on with the gate (and runtime-config)
        assert gated <= set(mine)
        # the documents whole: order, response kinds, storage version hashes, aggregated and not
        expected, got = documents(theirs_get, NOT_SERVED), documents(mine_get, ADDED)
        assert list(expected) == list(got)
        for name in expected:
            assert got[name] == expected[name], name
        if KUBECTL is not None:
            env = {**os.environ, "HOME": temp_home()}

            def ours_kubectl(*args: str) -> subprocess.CompletedProcess[str]:
                cmd = [str(KUBECTL), "--kubeconfig", str(server.kubeconfig), *args]
                return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=True)

            assert api_resources(ours_kubectl, ADDED) == api_resources(plane.kubectl, NOT_SERVED)
        compare_openapi(plane, server, theirs, explain=not upstream_flags)
    finally:
        server.stop()
        plane.stop()


def upstream_served(theirs: dict[str, tuple[Any, ...]]) -> Callable[[str], bool]:
    """Whether a path of kube-apiserver's OpenAPI is one this server serves: not a resource named in
    NOT_SERVED, not a group or group version all of whose resources are, not NOT_SERVED_PATHS."""
    versions: dict[str, set[str]] = {}
    for key in theirs:
        gv, resource = key.split()
        versions.setdefault(gv, set()).add(resource)
    gone = {gv for gv, rs in versions.items() if all(f"{gv} {r}" in NOT_SERVED for r in rs)}
    groups = {gv.split("/")[0] for gv in versions if "/" in gv}
    gone_groups = {g for g in groups if all(gv in gone for gv in versions if gv.startswith(g + "/"))}

    def served(path: str) -> bool:
        if path.startswith(NOT_SERVED_PATHS):
            return False
        found = resource_of(path)
        if found is not None:
            return f"{found[0]} {found[1]}" not in NOT_SERVED and found[0] not in gone
        parts = path.strip("/").split("/")
        if parts[0] == "apis" and len(parts) == 2:
            return parts[1] not in gone_groups
        if parts[0] == "apis" and len(parts) == 3:
            return f"{parts[1]}/{parts[2]}" not in gone
        return True

    return served


def compare_openapi(plane: ControlPlane, server: Server, theirs: dict[str, tuple[Any, ...]], explain: bool) -> None:
    """``/openapi/v3``'s entries and each document, and ``/openapi/v2``, against kube-apiserver's less
    what is not served here; a document nothing was taken from hashes as upstream's. ``explain``:
    also ``kubectl explain`` of a built-in kind and of the CRD's, recursively."""
    served = upstream_served(theirs)
    index = {k: v["serverRelativeURL"] for k, v in plane.request("GET", "/openapi/v3")[1]["paths"].items()}
    mine = {k: v["serverRelativeURL"] for k, v in server.request("GET", "/openapi/v3")[1]["paths"].items()}
    assert set(mine) == {e for e in index if served(f"/{e}/")}
    for entry, url in mine.items():
        expected = plane.request("GET", f"/openapi/v3/{entry}")[1]
        kept = keep_paths(expected, served)
        code, got = server.request("GET", url)
        assert code == 200, (entry, got)
        assert got == kept, entry
        if kept is expected:  # nothing taken out: the same bytes, so the same hash (a CRD's too)
            assert url == index[entry], entry
    expected_v2 = keep_paths(plane.request("GET", "/openapi/v2")[1], served)
    got_v2 = server.request("GET", "/openapi/v2")[1]
    assert list(got_v2) == list(expected_v2)
    for section in ("paths", "definitions", "parameters"):
        assert list(got_v2[section]) == list(expected_v2[section]), section
        assert got_v2[section] == expected_v2[section], section
    assert got_v2 == expected_v2
    if KUBECTL is None or not explain:
        return
    env = {**os.environ, "HOME": temp_home()}
    for args in (("pods.spec",), ("deployments", "--recursive"), ("podgroups", "--recursive")):
        outputs = [
            subprocess.run(
                [str(KUBECTL), "--kubeconfig", str(cfg), "explain", *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
                check=True,
            ).stdout
            for cfg in (plane.kubeconfig, server.kubeconfig)
        ]
        assert outputs[1] == outputs[0], args


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
