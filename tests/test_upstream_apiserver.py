"""``kubesched scheduler`` against the real thing: upstream's kube-apiserver v1.37.2 and etcd v3.7.0,
built from Go modules by ``scripts/build_upstream.sh``, beside upstream's own kube-scheduler v1.37.2
(a second profile's schedulerName). kubesched takes the kube-scheduler Lease, binds pods, writes
their Scheduled and FailedScheduling events in the events.k8s.io form, and patches an
unschedulable pod's PodScheduled condition; for the same pods, its messages are kube-scheduler's."""

from __future__ import annotations

import socket
import subprocess
import time
from typing import Any

import pytest
from tests.live import KUBESCHED, wait_for
from tests.upstream import REFERENCE_SCHEDULER, ControlPlane


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
        },
    }


def pod(name: str, cpu: str = "100m", scheduler: str = "default-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory):
    plane = ControlPlane(tmp_path_factory.mktemp("upstream")).start()
    try:
        yield plane
    finally:
        plane.stop()


def test_kubesched_scheduler_binds_and_records_against_kube_apiserver(upstream, tmp_path):
    upstream.apply(node("n1"), node("n2"), node("n3"))
    # kube-apiserver taints a new node not-ready (TaintNodesByCondition); no node controller runs here
    upstream.kubectl("taint", "nodes", "--all", "node.kubernetes.io/not-ready:NoSchedule-")
    log = open(tmp_path / "scheduler.log", "wb")  # noqa: SIM115
    sched = subprocess.Popen(
        [*KUBESCHED, "scheduler", "--kubeconfig", str(upstream.kubeconfig), "--secure-port", "0"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    config = tmp_path / "upstream-scheduler.yaml"
    config.write_text(REFERENCE_SCHEDULER.format(kubeconfig=upstream.kubeconfig))
    reference = subprocess.Popen(
        [str(upstream.bin / "kube-scheduler"), f"--config={config}", "--secure-port=0", "--v=2"],
        stdout=open(tmp_path / "kube-scheduler.log", "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
    )
    try:
        holder = wait_for(
            lambda: (
                (upstream.get("lease", "kube-scheduler", "-n", "kube-system").get("spec") or {}).get("holderIdentity")
                if upstream.kubectl("get", "lease", "kube-scheduler", "-n", "kube-system", check=False).returncode == 0
                else None
            ),
            60,
        )
        assert holder
        upstream.apply(
            *(pod(f"p{i}") for i in range(5)),
            pod("huge", cpu="100"),
            pod("huge-upstream", cpu="100", scheduler="upstream-scheduler"),
        )
        placed = wait_for(
            lambda: all((upstream.get("pod", f"p{i}").get("spec") or {}).get("nodeName") for i in range(5)),
            60,
        )
        assert placed
        nodes = {upstream.get("pod", f"p{i}")["spec"]["nodeName"] for i in range(5)}
        assert nodes <= {"n1", "n2", "n3"}

        def events() -> list[dict[str, Any]]:
            return upstream.get("events.v1.events.k8s.io", "-n", "default")["items"]

        def failed(name: str) -> dict[str, Any] | None:
            return next(
                (e for e in events() if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == name), None
            )

        ours = wait_for(lambda: failed("huge"), 60)
        theirs = wait_for(lambda: failed("huge-upstream"), 60)
        assert ours["reportingController"] == "default-scheduler"
        assert theirs["reportingController"] == "upstream-scheduler"
        assert ours["note"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
        assert ours["note"] == theirs["note"]  # upstream's own message for the same pod
        assert (ours["type"], ours["action"]) == (theirs["type"], theirs["action"])
        host = socket.gethostname()  # the events broadcaster's reportingInstance: "<controller>-<hostname>"
        assert (ours["reportingInstance"], theirs["reportingInstance"]) == (
            f"default-scheduler-{host}",
            f"upstream-scheduler-{host}",
        )
        scheduled = sorted(e["regarding"]["name"] for e in events() if e["reason"] == "Scheduled")
        assert scheduled == [f"p{i}" for i in range(5)]
        conditions = {}
        for name in ("huge", "huge-upstream"):
            got = upstream.get("pod", name)
            conditions[name] = next(c for c in got["status"]["conditions"] if c["type"] == "PodScheduled")
        assert (conditions["huge"]["status"], conditions["huge"]["reason"]) == ("False", "Unschedulable")
        for key in ("status", "reason", "message"):
            assert conditions["huge"][key] == conditions["huge-upstream"][key], key
        time.sleep(0.5)
        assert sched.poll() is None and reference.poll() is None
    finally:
        for proc in (sched, reference):
            proc.terminate()
            proc.wait(30)


ELECTION = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
leaderElection:
  leaderElect: true
  leaseDuration: 2s
  renewDeadline: 1500ms
  retryPeriod: 500ms
  resourceLock: leases
  resourceName: kube-scheduler
  resourceNamespace: kube-system
"""
FAST_ELECTION = [
    "--leader-elect-lease-duration",
    "2s",
    "--leader-elect-renew-deadline",
    "1.5s",
    "--leader-elect-retry-period",
    "0.5s",
]


def test_kube_scheduler_and_kubesched_hand_the_lease_over_on_sigkill(upstream, tmp_path):
    """One Lease, two implementations: kube-scheduler v1.37.2 leads, is killed with SIGKILL, and a
    kubesched replica takes over; then the other way round. Every pod is bound once, by the
    leader of the moment."""
    upstream.apply(node("h1"), node("h2"))
    upstream.kubectl("taint", "nodes", "--all", "node.kubernetes.io/not-ready:NoSchedule-", check=False)
    config = tmp_path / "election.yaml"
    config.write_text(ELECTION.format(kubeconfig=upstream.kubeconfig))

    def start_upstream(n: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [str(upstream.bin / "kube-scheduler"), f"--config={config}", "--secure-port=0", "--v=2"],
            stdout=open(tmp_path / f"kube-scheduler-{n}.log", "wb"),
            stderr=subprocess.STDOUT,
        )

    def start_kubesched(n: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [*KUBESCHED, "scheduler", "--kubeconfig", str(upstream.kubeconfig), "--secure-port", "0", *FAST_ELECTION],
            stdout=open(tmp_path / f"kubesched-{n}.log", "wb"),
            stderr=subprocess.STDOUT,
        )

    def holder() -> str:
        lease = upstream.get("lease", "kube-scheduler", "-n", "kube-system")
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    def bind_wave(prefix: str) -> None:
        upstream.apply(*(pod(f"{prefix}-{i}") for i in range(4)))
        wait_for(
            lambda: all((upstream.get("pod", f"{prefix}-{i}").get("spec") or {}).get("nodeName") for i in range(4)),
            60,
        )

    procs: list[subprocess.Popen[bytes]] = []
    try:
        reference = start_upstream(1)
        procs.append(reference)
        first = wait_for(lambda: holder() if "kubesched" not in holder() and holder() else None, 60)
        ours = start_kubesched(1)
        procs.append(ours)
        time.sleep(2.0)
        assert holder() == first  # kubesched waits as a follower
        bind_wave("a")
        reference.kill()  # SIGKILL: no release; the lease must expire
        reference.wait(10)
        second = wait_for(lambda: holder() if holder() not in ("", first) else None, 30)
        bind_wave("b")
        again = start_upstream(2)
        procs.append(again)
        time.sleep(2.0)
        assert holder() == second
        ours.kill()
        ours.wait(10)
        third = wait_for(lambda: holder() if holder() not in ("", second) else None, 30)
        assert third != first  # a new kube-scheduler identity
        bind_wave("c")
        events = upstream.get("events.v1.events.k8s.io", "-n", "default")["items"]
        scheduled: dict[str, int] = {}
        for e in events:
            if e["reason"] == "Scheduled" and e["regarding"]["name"][:2] in ("a-", "b-", "c-"):
                scheduled[e["regarding"]["name"]] = scheduled.get(e["regarding"]["name"], 0) + 1
        assert sorted(scheduled) == sorted(f"{w}-{i}" for w in "abc" for i in range(4))
        assert set(scheduled.values()) == {1}  # bound once each
        kubesched_log = (tmp_path / "kubesched-1.log").read_text(errors="replace")
        assert "started leading" in kubesched_log
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(30)
