"""examples/volumes through ``kubesched up`` with a real kubectl, as a user would run it: apply,
watch pods reach Running or stay Pending with upstream's message, claims Bound to volumes with
the right node affinity, the storage tables kubectl prints; then kill -9 and a restart lose
nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.live import Server, kubectl_binaries, temp_home

DRIVER = "disk.csi.example.com"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "volumes"
BINARIES = kubectl_binaries()
NEWEST = max(BINARIES, key=lambda v: int(v.split(".")[1]) if "." in v else 0) if BINARIES else None

pytestmark = pytest.mark.skipif(
    NEWEST is None, reason="no kubectl binary on this machine (google-cloud-sdk's kubectl.1.XX)"
)


def kubectl(server: Server, *args: str, home: str) -> str:
    env = {**os.environ, "HOME": home, "KUBECONFIG": str(server.kubeconfig)}
    assert NEWEST is not None
    out = subprocess.run([BINARIES[NEWEST], *args], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


def items(server: Server, kind: str, home: str) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o for o in json.loads(kubectl(server, "get", kind, "-o", "json", home=home))["items"]
    }


def test_volume_example_through_kubectl_survives_kill_9(tmp_path):
    server = Server(tmp_path / "data", command="up", nodes=0).start()
    home = temp_home()
    try:
        out = kubectl(server, "apply", "-f", str(EXAMPLES), home=home)
        assert "persistentvolume/local-a2 created" in out and "storageclass.storage.k8s.io/zonal-disk created" in out
        running = {"web-0", "web-1", "db-0", "cache-0", "batch-0"}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pods = items(server, "pods", home)
            up = {n for n, p in pods.items() if p.get("status", {}).get("phase") == "Running"}
            if running <= up and len(up) == len(running) + 1:
                break
            time.sleep(0.3)
        phases = {n: p["status"].get("phase") for n, p in pods.items()}
        # one of the two pods sharing the ReadWriteOncePod claim runs, whichever came first
        reports = sorted(n for n in ("report-0", "report-1") if phases[n] == "Running")
        assert len(reports) == 1 and {n for n, ph in phases.items() if ph == "Running"} == running | set(reports)
        other = "report-1" if reports == ["report-0"] else "report-0"
        assert "ReadWriteOncePod access mode already in-use by another pod" in kubectl(
            server, "describe", "pod", other, home=home
        )
        assert {pods["web-0"]["spec"]["nodeName"], pods["web-1"]["spec"]["nodeName"]} == {"node-a2", "node-b2"}
        assert pods["db-0"]["spec"]["nodeName"] in ("node-a1", "node-a2")
        described = kubectl(server, "describe", "pod", "web-2", home=home)
        assert "node(s) didn't find available persistent volumes to bind" in described
        claims = items(server, "pvc", home)
        local = {"node-a2": "local-a2", "node-b2": "local-b2"}[pods["web-0"]["spec"]["nodeName"]]
        assert claims["www-web-0"]["spec"]["volumeName"] == local
        assert claims["www-web-0"]["status"]["phase"] == "Bound"
        scratch = claims["cache-0-scratch"]
        assert scratch["status"]["phase"] == "Bound"
        volumes = items(server, "pv", home)
        provisioned = volumes[scratch["spec"]["volumeName"]]
        zone = provisioned["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
        node = items(server, "nodes", home)[pods["cache-0"]["spec"]["nodeName"]]
        assert zone["values"] == [node["metadata"]["labels"]["topology.kubernetes.io/zone"]]
        table = kubectl(server, "get", "pvc", "www-web-0", home=home).splitlines()
        assert table[0].split() == [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS",
            "MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE",
        ]
        assert table[1].split()[:6] == ["www-web-0", "Bound", local, "100Gi", "RWO", "local-storage"]
        sc = kubectl(server, "get", "sc", home=home).splitlines()
        assert sc[0].split() == [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE",
        ]
        assert any(r.split()[:5] == ["zonal-disk", DRIVER, "Delete", "WaitForFirstConsumer", "false"] for r in sc)
        assert any(r.split()[:2] == ["standard", "(default)"] for r in sc)  # up's own class, marked default
        pvs = kubectl(server, "get", "pv", "local-a2", "local-b2", home=home).splitlines()
        assert pvs[0].split()[:8] == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM"]
        assert {r.split()[5] for r in pvs[1:]} == {"default/www-web-0", "default/www-web-1"}
        csinodes = kubectl(server, "get", "csinode", "node-a1", home=home).splitlines()
        assert csinodes[0].split() == ["NAME", "DRIVERS", "AGE"] and csinodes[1].split()[:2] == ["node-a1", "1"]
        before = {n: (c["spec"].get("volumeName"), c["status"].get("phase")) for n, c in claims.items()}
        server.stop(signal.SIGKILL)
        server.start()
        after = {
            n: (c["spec"].get("volumeName"), c["status"].get("phase")) for n, c in items(server, "pvc", home).items()
        }
        assert after == before
        assert set(items(server, "pv", home)) == set(volumes)
    finally:
        server.stop()
