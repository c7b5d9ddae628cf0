"""Generate ``src/kubesched/apiserver/openapi/recorded.json.xz``: the OpenAPI documents kube-apiserver
v1.37.2 serves (``/openapi/v2`` and every document ``/openapi/v3`` lists), read from upstream's own
kube-apiserver (``scripts/build_upstream.sh``) started on loopback with etcd serving
scheduling.k8s.io/v1beta1 with GenericWorkload; and the documents of two template CRDs (namespaced
and cluster-scoped, with status and scale), from which ``apiserver/openapi/custom.py`` makes a
CRD's paths by substituting its names. kube-apiserver leaves the fields of disabled features out of
its definitions (``GetOpenAPIDefinitionsWithoutDisabledFeatures``), so it is started with the
default flags too and every document compared: they must differ by that group version alone.

    python scripts/gen_openapi.py

The committed ``api/openapi-spec`` of k8s.io/kubernetes is not what the binary serves (it has no
enums and another title), so the documents are recorded from the server, each as the JSON text it
sent (key order kept). ``kubesched apiserver`` serves them with the paths of what it does not serve
taken out (``apiserver/openapi/``); ``tests/test_upstream_openapi.py`` compares the two.
"""

from __future__ import annotations

import json
import lzma
import time
import ssl
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubesched.apiserver.openapi.custom import TEMPLATE_GROUPS, TEMPLATE_NAMES  # noqa: E402
from kubesched.apiserver.openapi.prune import keep_paths  # noqa: E402
from tests.upstream import ADMIN_TOKEN, AS_KUBESCHED, ControlPlane  # noqa: E402

TARGET = ROOT / "src" / "kubesched" / "apiserver" / "openapi" / "recorded.json.xz"


def fetch(plane: ControlPlane, path: str) -> str:
    """The body kube-apiserver sends for ``path`` as JSON, as text."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # kube-apiserver's self-signed serving certificate
    req = urllib.request.Request(plane.server + path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    req.add_header("Accept", "application/json")
    with urllib.request.urlopen(req, context=ctx, timeout=60) as resp:
        return resp.read().decode()


def template_crd(scope: str) -> dict[str, object]:
    """A CRD whose names appear nowhere else in a document: ``custom.py`` replaces them."""
    replicas = {"type": "object", "properties": {"replicas": {"type": "integer"}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{TEMPLATE_NAMES['plural']}.{TEMPLATE_GROUPS[scope]}"},
        "spec": {
            "group": TEMPLATE_GROUPS[scope],
            "scope": scope,
            "names": {k: TEMPLATE_NAMES[k] for k in ("kind", "listKind", "plural", "singular")},
            "versions": [
                {
                    "name": TEMPLATE_NAMES["version"],
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": replicas, "status": replicas}}},
                    "subresources": {
                        "status": {},
                        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                    },
                }
            ],
        },
    }


def record(plane: ControlPlane) -> dict[str, object]:
    index = json.loads(fetch(plane, "/openapi/v3"))
    return {"v2": fetch(plane, "/openapi/v2"), "v3": {path: fetch(plane, f"/openapi/v3/{path}") for path in index["paths"]}}


def templates(plane: ControlPlane) -> dict[str, object]:
    """Per scope, the template CRD's ``/openapi/v3`` document and what it adds to ``/openapi/v2``."""
    before = json.loads(fetch(plane, "/openapi/v2"))
    out: dict[str, object] = {}
    for scope, group in TEMPLATE_GROUPS.items():
        code, body = plane.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", template_crd(scope))
        if code != 201:
            sys.exit(f"gen_openapi: creating the {scope} template CRD: {code} {body}")
    path = f"apis/{{}}/{TEMPLATE_NAMES['version']}"
    deadline = time.monotonic() + 60
    while True:
        index = json.loads(fetch(plane, "/openapi/v3"))["paths"]
        v2 = json.loads(fetch(plane, "/openapi/v2"))
        if all(path.format(g) in index for g in TEMPLATE_GROUPS.values()) and all(
            any(g in p for p in v2["paths"]) for g in TEMPLATE_GROUPS.values()
        ):
            break
        if time.monotonic() > deadline:
            sys.exit("gen_openapi: the template CRDs never appeared in /openapi/v3 and /openapi/v2")
        time.sleep(0.5)
    for scope, group in TEMPLATE_GROUPS.items():
        reversed_group = ".".join(reversed(group.split(".")))
        out[scope] = {
            "v3": fetch(plane, "/openapi/v3/" + path.format(group)),
            "v2": {
                "paths": {p: v for p, v in v2["paths"].items() if p not in before["paths"] and group in p},
                "definitions": {d: v for d, v in v2["definitions"].items() if d.startswith(reversed_group + ".")},
            },
        }
    return out


def same_but_gated(default: dict[str, Any], gated: dict[str, Any]) -> None:
    """Exit unless the default flags' documents are the gated ones without scheduling.k8s.io/v1beta1."""
    extra = set(gated["v3"]) - set(default["v3"])
    if extra != {"apis/scheduling.k8s.io/v1beta1"} or set(default["v3"]) - set(gated["v3"]):
        sys.exit(f"gen_openapi: the gated server lists other documents: {sorted(extra)}")
    for path, text in default["v3"].items():
        if json.loads(text) != json.loads(gated["v3"][path]):
            sys.exit(f"gen_openapi: /openapi/v3/{path} differs with GenericWorkload on: record both")
    v2 = keep_paths(json.loads(gated["v2"]), lambda p: "/scheduling.k8s.io/v1beta1/" not in p)
    if v2 != json.loads(default["v2"]):
        sys.exit("gen_openapi: /openapi/v2 differs with GenericWorkload on beyond its group version: record both")


def main() -> None:
    recorded: dict[str, Any] = {}
    for name, flags in (("default", ()), ("gated", AS_KUBESCHED)):
        with tempfile.TemporaryDirectory(prefix="kubesched-openapi-") as tmp:
            plane = ControlPlane(Path(tmp), args=flags).start()
            try:
                recorded[name] = record(plane)
                if name == "default":
                    recorded["crd"] = templates(plane)
            finally:
                plane.stop()
    same_but_gated(recorded["default"], recorded["gated"])
    data = {**recorded["gated"], "crd": recorded["crd"]}
    blob = json.dumps(data, separators=(",", ":")).encode()
    TARGET.write_bytes(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))
    print(f"/openapi/v2, {len(data['v3'])} /openapi/v3 documents, two template CRDs: {TARGET.stat().st_size} bytes")


if __name__ == "__main__":
    main()
