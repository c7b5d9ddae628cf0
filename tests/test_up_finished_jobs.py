"""A Job that finishes under ``kubesched up`` frees its node at once, as a new user meets it: its
pod completes on the hollow kubelet, a pod that fits only in the room it held is scheduled as
soon as it does, ``kubectl describe node`` (v1.37.2) counts only the pods still running, and the
web UI's state marks the finished pod so its node usage leaves it out."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request

import pytest
import yaml
from tests.live import Server, kubectl_binaries, temp_home, wait_for

KUBECTL = kubectl_binaries().get("1.37")

JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: crunch, namespace: default}
spec:
  template:
    metadata:
      annotations: {kubesched.io/run-seconds: "3"}
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: pause
        resources: {requests: {cpu: 3500m}}
"""

LATE = """apiVersion: v1
kind: Pod
metadata: {name: late, namespace: default}
spec:
  containers:
  - name: c
    image: pause
    resources: {requests: {cpu: "1"}}
"""


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl (scripts/build_upstream.sh builds v1.37.2)")
def test_a_finished_jobs_pod_no_longer_holds_its_node(tmp_path):
    server = Server(tmp_path / "data", command="up", nodes=1).start()  # one hollow node: 4 CPU
    env = {**os.environ, "HOME": temp_home(), "KUBECONFIG": str(server.kubeconfig)}

    def kubectl(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, env=env, timeout=60, input=stdin)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def pod(name: str) -> dict:
        return json.loads(kubectl("get", "pod", name, "-o", "json"))

    try:
        kubectl("apply", "-f", "-", stdin=JOB)
        job_pod = wait_for(lambda: kubectl("get", "pods", "-l", "job-name=crunch", "-o", "name").strip(), 20)
        name = job_pod.split("/", 1)[1]
        wait_for(lambda: (pod(name).get("status") or {}).get("phase") == "Running", 20)
        kubectl("apply", "-f", "-", stdin=LATE)

        def pending_for_cpu() -> bool:
            status = pod("late").get("status") or {}
            cond = next((c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"), {})
            return "Insufficient cpu" in (cond.get("message") or "")

        # while the Job's pod runs there is no room; it completes after 3 s (run-seconds)
        if (pod(name).get("status") or {}).get("phase") == "Running":
            wait_for(pending_for_cpu, 10)
        wait_for(lambda: (pod(name).get("status") or {}).get("phase") == "Succeeded", 20)
        wait_for(lambda: pod("late")["spec"].get("nodeName"), 5)  # at once: no five-minute flush

        described = kubectl("describe", "node")
        assert "Non-terminated Pods:          (1 in total)" in described, described
        assert "late" in described and name not in described.split("Non-terminated Pods:")[1].split("Events:")[0]
        assert "cpu                1 (25%)" in described, described

        token = yaml.safe_load(server.kubeconfig.read_text())["users"][0]["user"]["token"]
        req = urllib.request.Request(
            f"http://127.0.0.1:{server.ui_port}/api/state", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            state = json.loads(resp.read())
        shown = {p["name"]: p for p in state["pods"]}
        assert shown[name]["terminated"] is True and shown[name]["phase"] == "Succeeded"
        assert shown["late"]["terminated"] is False and shown["late"]["node"]
    finally:
        server.stop()
