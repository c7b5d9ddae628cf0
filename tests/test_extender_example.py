"""``examples/extender``: the example extender as its own process and ``kubesched simulate`` with the
example's configuration (kube-scheduler's format), as the README shows them."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.live import KUBESCHED, free_port

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "extender"


def test_the_example_extender_filters_and_prioritizes(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLE / "extender.py"), "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and "extender listening" in proc.stdout.readline()
        config = tmp_path / "config.yaml"
        config.write_text((EXAMPLE / "config.yaml").read_text().replace("8888", str(port)))
        out = subprocess.run(
            [*KUBESCHED, "simulate", "--config", str(config), "--output", "json", str(EXAMPLE / "cluster.yaml")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        pods = {p["name"]: p for p in json.loads(out.stdout)["pods"]}
        assert pods["web"]["nodeName"] == "node-2"  # the fast node: 10 x weight 5 x 10
        assert pods["trainer"]["nodeName"] == "node-4"  # the only A100
        assert pods["pinned"]["message"].startswith(
            "0/4 nodes are available: 1 node is under maintenance, 3 node(s) didn't match Pod's node affinity/selector."
        )
        # the protocol by hand: an unknown verb is a 404 with an Error
        req = urllib.request.Request(f"http://127.0.0.1:{port}/scheduler/bind", data=b"{}", method="POST")
        try:
            urllib.request.urlopen(req, timeout=5)
            raise AssertionError("expected 404")
        except urllib.error.HTTPError as err:
            assert err.code == 404 and json.loads(err.read()) == {"Error": "unknown verb bind"}
    finally:
        proc.terminate()
        proc.wait(5)


def test_without_the_extender_the_same_pods_go_elsewhere(tmp_path):
    out = subprocess.run(
        [*KUBESCHED, "simulate", "--output", "json", str(EXAMPLE / "cluster.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    pods = {p["name"]: p for p in json.loads(out.stdout)["pods"]}
    assert pods["pinned"]["nodeName"] == "node-1"  # nothing keeps it off the node under maintenance
