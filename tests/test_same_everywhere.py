"""What a pod goes through is the same wherever the embedded cluster runs: the same manifests
through ``kubesched simulate`` (virtual clock, one process), ``kubesched.testing.Cluster`` (the
plugin authors' harness) and ``kubesched up`` (the API server, the hollow kubelet and the scheduler
on the wall clock) give the same placements and the same scheduler events."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubesched.cluster.loader import load_paths
from live import Server, wait_for

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "basic"
KUBESCHED = [sys.executable, "-m", "kubesched"]
SCHEDULER_REASONS = ("Scheduled", "FailedScheduling")


def simulate() -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    done = subprocess.run(
        [*KUBESCHED, "simulate", str(EXAMPLE), "-o", "json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    placed = {f"{p['namespace']}/{p['name']}": p["nodeName"] or "" for p in doc["pods"]}
    events = {
        (e["reason"], f"{e['namespace']}/{e['name']}", e["message"])
        for e in doc["events"]
        if e["reason"] in SCHEDULER_REASONS
    }
    return placed, events


def _events(events: list[dict]) -> set[tuple[str, str, str]]:
    out = set()
    for e in events:
        if e.get("reason") not in SCHEDULER_REASONS:
            continue
        ref = e.get("regarding") or e.get("involvedObject") or {}
        out.add((e["reason"], f"{ref.get('namespace')}/{ref.get('name')}", e.get("note") or e.get("message") or ""))
    return out


def harness() -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    from kubesched.testing import Cluster

    manifests = load_paths([str(EXAMPLE)]).manifests
    cluster = Cluster(*(m.obj for m in sorted(manifests, key=lambda m: m.kind != "Namespace")))
    cluster.settle()
    cluster.client.flush_events(final=True)
    placed = {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": (p.get("spec") or {}).get("nodeName") or ""
        for p in cluster.store.list("Pod")[0]
    }
    return placed, _events(cluster.store.list("Event")[0])


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory):
    s = Server(tmp_path_factory.mktemp("same") / "data", command="up", nodes=0, args=[str(EXAMPLE)]).start()
    try:
        yield s
    finally:
        s.stop()


def live(server: Server, expected: dict[str, str]) -> tuple[dict[str, str], set[tuple[str, str, str]]]:
    def placed() -> dict[str, str]:
        pods = server.request("GET", "/api/v1/pods")[1]["items"]
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": (p.get("spec") or {}).get("nodeName") or ""
            for p in pods
        }

    wait_for(lambda: placed() == expected, timeout=30)

    def events() -> set[tuple[str, str, str]]:
        return _events(server.request("GET", "/apis/events.k8s.io/v1/events")[1]["items"])

    # every pod bound has its Scheduled event, every pending (not gated) one its FailedScheduling
    wait_for(lambda: len({e[1] for e in events()}) >= len(expected) - 1, timeout=30)
    return placed(), events()


def test_the_same_placements_and_events(up: Server) -> None:
    simulated, simulated_events = simulate()
    harnessed, harnessed_events = harness()
    assert harnessed == simulated
    assert harnessed_events == simulated_events
    served, served_events = live(up, simulated)
    assert served == simulated
    assert served_events == simulated_events
