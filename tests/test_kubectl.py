"""Real kubectl binaries (the oldest and newest this machine has) against ``kubesched up``: the
newcomer's session — apply, get, describe, events, label, delete, watch, leases, priority classes,
budgets — with a fresh HOME per run so no discovery is cached between tests."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from tests.live import Server, kubectl_binaries, temp_home

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BINARIES = kubectl_binaries()
VERSIONS = sorted(BINARIES, key=lambda v: int(v.split(".")[1]) if "." in v else 0)
PICKED = sorted({VERSIONS[0], VERSIONS[-1]}) if VERSIONS else []

pytestmark = pytest.mark.skipif(
    not BINARIES, reason="no kubectl binary on this machine (google-cloud-sdk's kubectl.1.XX)"
)

PDB = """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb, namespace: shop}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("kubectl") / "data", command="up", nodes=3).start()
    yield s
    s.stop()


def run(cluster: Server, binary: str, *args: str, home: str, timeout: float = 60, stdin: str | None = None) -> str:
    env = {**os.environ, "HOME": home, "KUBECONFIG": str(cluster.kubeconfig)}
    out = subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=timeout, input=stdin)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


@pytest.mark.parametrize("version", PICKED)
def test_newcomer_session(cluster, tmp_path, version):
    kubectl, home = BINARIES[version], temp_home()
    ns = f"v{version.replace('.', '-')}"

    def k(*args: str, **kw: object) -> str:
        return run(cluster, kubectl, *args, home=home, **kw)  # type: ignore[arg-type]

    assert "node-0" in k("get", "nodes")
    # kubectl 1.33's typed generators send protobuf bodies (older ones JSON)
    assert f"namespace/{ns} created" in k("create", "namespace", ns)
    manifest = (EXAMPLES / "basic" / "cluster.yaml").read_text()
    manifest = manifest.replace("namespace: shop", f"namespace: {ns}").replace("namespace: ml", f"namespace: {ns}")
    manifest = manifest.replace("metadata: {name: shop}", f"metadata: {{name: {ns}-s}}")
    manifest = manifest.replace("metadata: {name: ml}", f"metadata: {{name: {ns}-m}}")
    for name in ("node-a", "node-b", "gpu-1"):
        manifest = manifest.replace(f"name: {name}", f"name: {ns}-{name}").replace(
            f"hostname: {name}", f"hostname: {ns}-{name}"
        )
    path = tmp_path / "cluster.yaml"
    path.write_text(manifest)
    out = k("apply", "-f", str(path))
    assert "pod/web-1 created" in out
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        wide = k("get", "pods", "-n", ns, "-o", "wide")
        if all(line.split()[6] != "<none>" for line in wide.splitlines()[1:] if line.split()[0] in ("web-1", "db")):
            break
        time.sleep(0.3)
    rows = {line.split()[0]: line.split() for line in wide.splitlines()[1:]}
    assert rows["web-1"][2] == "Running" and rows["web-1"][6] != "<none>"
    assert rows["trainer-2"][2] == "Pending" and rows["trainer-2"][6] == "<none>"
    described = k("describe", "pod", "trainer-2", "-n", ns)
    assert "FailedScheduling" in described and "Insufficient nvidia.com/gpu" in described
    assert "default-scheduler" in described
    events = k("get", "events", "-n", ns)
    assert "Scheduled" in events and "FailedScheduling" in events
    assert ns in k("get", "pods", "-A")
    k("label", "pod", "db", "-n", ns, "tier=db")
    assert "tier=db" in k("get", "pod", "db", "-n", ns, "--show-labels")
    assert "kind: Pod" in k("get", "pod", "web-1", "-n", ns, "-o", "yaml")
    # the client-side apply that created the pods owns the atomic .spec.tolerations it set; the
    # DefaultTolerationSeconds admission then added two, so applying the file's list server-side
    # would change a field another manager owns: a conflict (and forcing it would shrink a pod's
    # tolerations, which pod validation forbids). Everything else is applied.
    env = {**os.environ, "HOME": home, "KUBECONFIG": str(cluster.kubeconfig)}
    ssa = subprocess.run([kubectl, "apply", "--server-side", "-f", str(path)], capture_output=True, text=True, env=env)
    assert ssa.returncode == 1 and "pod/web-1 serverside-applied" in ssa.stdout
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .spec.tolerations'
        in ssa.stderr
    )
    # where it applied, kubectl moved the client-side apply's fields to its own Apply entry (a
    # JSON patch of managedFields, which the server takes as sent)
    owners = json.loads(k("get", "pod", "web-1", "-n", ns, "-o", "json", "--show-managed-fields"))["metadata"]
    managers = {(m["manager"], m["operation"]) for m in owners["managedFields"]}
    assert ("kubectl", "Apply") in managers and ("kubectl-client-side-apply", "Update") not in managers
    k("create", "-f", "-", stdin=PDB.replace("shop", ns))
    assert "web-pdb" in k("get", "pdb", "-n", ns)
    assert "high" in k("get", "pc")
    assert "node-0" in k("get", "lease", "-n", "kube-node-lease")
    assert "Ready" in k("describe", "node", "node-0")
    watcher = subprocess.Popen(
        [kubectl, "get", "pods", "-n", ns, "-w"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HOME": home, "KUBECONFIG": str(cluster.kubeconfig)},
    )
    time.sleep(1.5)
    k(
        "apply",
        "-f",
        "-",
        stdin=f"apiVersion: v1\nkind: Pod\nmetadata: {{name: late, namespace: {ns}}}\n"
        "spec: {containers: [{name: c, image: nginx}]}\n",
    )
    started = time.monotonic()
    k("delete", "pod", "gated", "-n", ns)  # unbound: goes at once
    k("delete", "pod", "late", "-n", ns, "--grace-period=1")
    assert time.monotonic() - started < 15
    time.sleep(1)
    watcher.terminate()
    seen = watcher.communicate(timeout=10)[0]
    assert "late" in seen and "Running" in seen
    assert "gated" not in k("get", "pods", "-n", ns)
    # the next session's nodes would take this one's pending pods (an idle scheduler pops them from
    # backoff as soon as a node appears): they go, so that each session sees its own cluster
    k("delete", "pod", "trainer-2", "batch-big", "-n", ns, "--grace-period=0")


@pytest.mark.parametrize("version", PICKED)
def test_typed_generators(cluster, version):
    """``kubectl create <kind>`` generators: kubectl 1.33 sends their objects as protobuf, which
    the server decodes to the same objects older kubectls send as JSON."""
    kubectl, home = BINARIES[version], temp_home()
    ns = f"gen{version.replace('.', '-')}"

    def k(*args: str) -> str:
        return run(cluster, kubectl, *args, home=home)

    k("create", "namespace", ns)
    k("create", "configmap", "cfg", "-n", ns, "--from-literal=a=b", "--from-literal=c=d")
    assert k("get", "cm", "cfg", "-n", ns, "-o", "jsonpath={.data}") == '{"a":"b","c":"d"}'
    k("create", "priorityclass", f"pc-{ns}", "--value=1000", "--description=important")
    assert k("get", "pc", f"pc-{ns}", "-o", "jsonpath={.value} {.description} {.preemptionPolicy}") == (
        "1000 important PreemptLowerPriority"
    )
    k("create", "pdb", "web", "-n", ns, "--selector=app=web", "--min-available=50%")
    assert k("get", "pdb", "web", "-n", ns, "-o", "jsonpath={.spec}") == (
        '{"minAvailable":"50%","selector":{"matchLabels":{"app":"web"}}}'
    )
    k("create", "service", "clusterip", "svc", "-n", ns, "--tcp=80:8080")
    assert k("get", "svc", "svc", "-n", ns, "-o", "jsonpath={.spec.ports[0].port} {.spec.ports[0].targetPort}") == (
        "80 8080"
    )


def test_dra_example_through_kubectl(tmp_path):
    """examples/dra applied with kubectl to ``kubesched up``: claims made from the template,
    allocated on the node with the big GPUs, the fifth pod Pending with DynamicResources'
    message, and its claim allocated once a trainer is deleted."""
    kubectl, home = BINARIES[VERSIONS[-1]], temp_home()
    s = Server(tmp_path / "data", command="up").start()
    try:

        def k(*args: str) -> str:
            return run(s, kubectl, *args, home=home)

        k("apply", "-f", str(EXAMPLES / "dra"))

        def placed() -> dict[str, str]:
            out = k(
                "get", "pods", "-n", "ml", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName} {end}"
            )
            return dict(item.split("=") for item in out.split())

        deadline = time.monotonic() + 30
        while sum(1 for n in placed().values() if n) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        nodes = placed()
        assert sorted(nodes.values()) == ["", "gpu-node-1", "gpu-node-1", "gpu-node-1", "gpu-node-1"]
        waiting = next(p for p, n in nodes.items() if not n)
        states = k(
            "get",
            "resourceclaims",
            "-n",
            "ml",
            "-o",
            "jsonpath={range .items[*]}{.status.allocation.devices.results[0].device} {end}",
        )
        assert sorted(states.split()) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
        assert "allocated,reserved" in k("get", "resourceclaims", "-n", "ml")
        events = k(
            "get", "events", "-n", "ml", "--field-selector", f"involvedObject.name={waiting},reason=FailedScheduling"
        )
        assert "2 cannot allocate all claims. preemption:" in events
        k("delete", "pod", "-n", "ml", next(p for p, n in nodes.items() if n))
        deadline = time.monotonic() + 30
        while not placed().get(waiting) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert placed()[waiting] == "gpu-node-1"
    finally:
        s.stop()


def test_gang_example_through_kubectl(tmp_path):
    """examples/gang applied with kubectl to ``kubesched up --feature-gates GenericWorkload=true``:
    the PodGroup lists as a Gang, Unschedulable while two of its three workers would fit, and
    Scheduled with all three bound once kubectl adds the third node."""
    kubectl, home = BINARIES[VERSIONS[-1]], temp_home()
    s = Server(tmp_path / "data", command="up", args=["--feature-gates", "GenericWorkload=true"]).start()
    try:

        def k(*args: str) -> str:
            return run(s, kubectl, *args, home=home)

        k("apply", "-f", str(EXAMPLES / "gang" / "cluster.yaml"), "-f", str(EXAMPLES / "gang" / "training.yaml"))

        def status() -> str:
            return k("get", "podgroups", "-n", "ml", "trainer", "--no-headers")

        deadline = time.monotonic() + 30
        while "Unschedulable" not in status() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status().split()[:4] == ["trainer", "Gang", "<none>", "Unschedulable"]
        pending = k("get", "pods", "-n", "ml", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{' '}{end}")
        assert pending.split() == []
        events = k("get", "events", "-n", "ml", "--field-selector", "reason=FailedScheduling")
        assert "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining" in events
        k("apply", "-f", str(EXAMPLES / "gang" / "third-node.yaml"))
        deadline = time.monotonic() + 40  # the gang retries after its backoff
        while "Scheduled" not in status() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status().split()[3] == "Scheduled"
        nodes = k("get", "pods", "-n", "ml", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{' '}{end}")
        assert sorted(nodes.split()) == ["gpu-1", "gpu-2", "gpu-3"]
    finally:
        s.stop()
