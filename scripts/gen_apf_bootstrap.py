"""Generate ``src/kubesched/api/flowcontrol_bootstrap.json``: kube-apiserver v1.37.2's API
Priority and Fairness bootstrap configuration (the PriorityLevelConfigurations and FlowSchemas its
``priority-and-fairness-config-producer`` post-start hook ensures, from
``apiserver/pkg/apis/flowcontrol/bootstrap/default.go``), read from upstream's own kube-apiserver
(``scripts/build_upstream.sh``) started on loopback with etcd.

    python scripts/gen_apf_bootstrap.py

Kept: each object's name, its ``apf.kubernetes.io/autoupdate-spec`` annotation and its spec, and
whether it is mandatory (``exempt`` and ``catch-all``, kept as upstream defines them even when an
operator edits them) or suggested. ``tests/test_upstream_flowcontrol.py`` compares what ``kubesched
apiserver`` serves with what kube-apiserver serves.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.upstream import AS_KUBESCHED, ControlPlane  # noqa: E402

GROUP = "/apis/flowcontrol.apiserver.k8s.io/v1"
MANDATORY = ("exempt", "catch-all")  # bootstrap's MandatoryPriorityLevelConfigurations / MandatoryFlowSchemas


def kept(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {
        "metadata": {"name": meta["name"], "annotations": meta.get("annotations") or {}},
        "spec": obj["spec"],
        "mandatory": meta["name"] in MANDATORY,
    }


def read(plane: ControlPlane) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for key, plural in (("priorityLevelConfigurations", "prioritylevelconfigurations"), ("flowSchemas", "flowschemas")):
        code, body = plane.request("GET", f"{GROUP}/{plural}")
        if code != 200:
            sys.exit(f"gen_apf_bootstrap: GET {plural}: {code} {body}")
        out[key] = sorted((kept(o) for o in body["items"]), key=lambda o: o["metadata"]["name"])
    return out


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kubesched-apf-bootstrap-") as tmp:
        plane = ControlPlane(Path(tmp), args=AS_KUBESCHED).start()
        try:
            config = read(plane)
            # the ensurer runs once the informers synced: wait for the suggested objects too
            for _ in range(60):
                if len(config["flowSchemas"]) >= 11:  # 2 mandatory and 9 suggested in v1.37
                    break
                time.sleep(1)
                config = read(plane)
        finally:
            plane.stop()
    target = ROOT / "src" / "kubesched" / "api" / "flowcontrol_bootstrap.json"
    target.write_text(json.dumps(config, indent=1) + "\n")
    print(", ".join(f"{len(v)} {k}" for k, v in config.items()))


if __name__ == "__main__":
    main()
