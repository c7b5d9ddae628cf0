"""Starting the embedded server: manifests given as PATHs go through the same admission as an
HTTP create (defaulting, namespace label, pods Pending until the hollow kubelet starts them),
a restart keeps them without duplicates, and bad input is one line with exit 2."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.live import KUBESCHED, Server

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_paths_are_loaded_through_admission_and_kept_on_restart(tmp_path):
    s = Server(tmp_path / "data", args=[str(EXAMPLES / "preemption")]).start()
    try:
        _, pods = s.request("GET", "/api/v1/namespaces/default/pods")
        by_name = {p["metadata"]["name"]: p for p in pods["items"]}
        running = [n for n, p in by_name.items() if p["spec"].get("nodeName")]
        assert running and all(by_name[n]["status"]["phase"] == "Running" for n in running)
        assert all(p["spec"]["restartPolicy"] == "Always" and p["status"]["qosClass"] for p in pods["items"])
        s.stop()
        s.start()
        _, again = s.request("GET", "/api/v1/namespaces/default/pods")
        assert sorted(p["metadata"]["uid"] for p in again["items"]) == sorted(
            p["metadata"]["uid"] for p in pods["items"]
        )
    finally:
        s.stop()


def test_bad_manifest_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 1.5.5}}\n")
    started = time.monotonic()
    out = subprocess.run(
        [*KUBESCHED, "apiserver", "--data-dir", str(tmp_path / "d"), "--port", "1", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == (
        f"kubesched: error: {bad}: Node n: field status.allocatable[cpu]: "
        "unable to parse quantity's suffix '.5' in '1.5.5'"
    )
    assert "Traceback" not in out.stderr and time.monotonic() - started < 60


def test_scheduler_with_missing_kubeconfig_is_one_line(tmp_path):
    out = subprocess.run(
        [*KUBESCHED, "scheduler", "--kubeconfig", str(tmp_path / "none")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert out.stderr.strip() == f"kubesched: error: {tmp_path / 'none'}: kubeconfig not found"


def test_scheduler_with_a_file_that_is_no_kubeconfig_is_one_line(tmp_path):
    for text in ("just a hostname\n", "apiVersion: v1\nclusters: []\n", "a: [\n"):
        path = tmp_path / "kc"
        path.write_text(text)
        out = subprocess.run(
            [*KUBESCHED, "scheduler", "--kubeconfig", str(path)], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
        assert out.stderr.startswith(f"kubesched: error: {path}: not a kubeconfig")


def test_no_kubelet_leaves_nodes_and_bound_pods_as_written(tmp_path):
    """scheduler_perf's setting: no kubelet, so a node gets no conditions or Lease and a bound
    pod stays Pending (with the kubelet both change, as the first test shows)."""
    s = Server(tmp_path / "data", nodes=1, args=["--no-kubelet"]).start()
    try:
        _, node = s.request("GET", "/api/v1/nodes/node-0")
        assert "conditions" not in node["status"]
        code, _ = s.request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-0")
        assert code == 404
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "i"}]},
        }
        assert s.request("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
        time.sleep(1.5)  # the controllers' loop runs at least once a second
        _, got = s.request("GET", "/api/v1/namespaces/default/pods/p")
        assert got["status"]["phase"] == "Pending"
    finally:
        s.stop()


def test_scheduler_reads_klogs_verbosity_as_kube_scheduler_manifests_write_it(tmp_path):
    """``-v=4`` (pflag's shorthand with ``=``), ``-v 4`` and ``--v=4`` are one flag, as for
    kube-scheduler; a level that is no number is one line naming the flag."""
    from click.testing import CliRunner

    from kubesched.cli import main

    missing = str(tmp_path / "none")
    for flag in (["-v=4"], ["-v", "4"], ["--v=4"]):
        got = CliRunner().invoke(main, ["scheduler", *flag, "--kubeconfig", missing])
        assert got.exit_code == 2 and "kubeconfig not found" in got.output, (flag, got.output)
    got = CliRunner().invoke(main, ["scheduler", "-v=x", "--kubeconfig", missing])
    assert got.exit_code == 2 and "Invalid value for '-v' / '--v': 'x' is not a valid integer" in got.output
