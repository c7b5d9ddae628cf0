"""Generate ``src/kubesched/apiserver/auth/bootstrap_policy.json``: kube-apiserver v1.37.2's bootstrap RBAC
policy (every ClusterRole, ClusterRoleBinding, Role and RoleBinding its RBAC post-start hook
reconciles, labelled ``kubernetes.io/bootstrapping=rbac-defaults``), read from upstream's own
kube-apiserver (``scripts/build_upstream.sh``) started on loopback with etcd, serving what the
embedded API server serves (scheduling.k8s.io/v1beta1, whose GenericWorkload gate adds rules).

    python scripts/gen_bootstrap_policy.py

Only what the policy says is kept: name, namespace, labels and annotations, rules,
aggregationRule, roleRef and subjects. ``tests/test_upstream_bootstrap_policy.py`` compares what
``kubesched apiserver`` serves with what kube-apiserver serves, rule by rule.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.upstream import AS_KUBESCHED, ControlPlane  # noqa: E402

RBAC = "/apis/rbac.authorization.k8s.io/v1"
KINDS = (("clusterRoles", "clusterroles"), ("clusterRoleBindings", "clusterrolebindings"))
NAMESPACED = (("roles", "roles"), ("roleBindings", "rolebindings"))
SELECTOR = "?labelSelector=kubernetes.io%2Fbootstrapping%3Drbac-defaults"


def policy_object(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    out: dict[str, Any] = {
        "metadata": {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if meta.get(k) is not None}
    }
    for key in ("rules", "aggregationRule", "roleRef", "subjects"):
        if key in obj:
            out[key] = obj[key]
    return out


def read(plane: ControlPlane) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for key, plural in (*KINDS, *NAMESPACED):
        code, body = plane.request("GET", f"{RBAC}/{plural}{SELECTOR}")
        if code != 200:
            sys.exit(f"gen_bootstrap_policy: GET {plural}: {code} {body}")
        items = [policy_object(o) for o in body["items"]]
        out[key] = sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
    return out


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kubesched-bootstrap-policy-") as tmp:
        plane = ControlPlane(Path(tmp), args=AS_KUBESCHED).start()
        try:
            policy = read(plane)
        finally:
            plane.stop()
    target = ROOT / "src" / "kubesched" / "apiserver" / "auth" / "bootstrap_policy.json"
    target.write_text(json.dumps(policy, indent=1, sort_keys=False) + "\n")
    print(", ".join(f"{len(v)} {k}" for k, v in policy.items()))


if __name__ == "__main__":
    main()
