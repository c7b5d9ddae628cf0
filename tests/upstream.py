"""Upstream's own control plane for the tests that measure kubesched against it: the binaries built
by ``scripts/build_upstream.sh`` (kube-apiserver, kube-scheduler, kube-controller-manager, kubectl
v1.37.2, etcd v3.7.0, from Go modules; built once per machine), and an etcd + kube-apiserver pair on
loopback with a static admin token, as upstream's integration tests run them."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from tests.live import KUBESCHED, free_port

ROOT = Path(__file__).resolve().parent.parent
VERSION = "v1.37.2"
ADMIN_TOKEN = "upstream-admin-token"
REFERENCE_SCHEDULER = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
leaderElection:
  leaderElect: false
profiles:
- schedulerName: upstream-scheduler
"""  # kube-scheduler v1.37.2 beside kubesched: its own schedulerName, no Lease
PLAIN_SCHEDULER = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
leaderElection:
  leaderElect: false
"""  # kube-scheduler v1.37.2 as the cluster's default-scheduler, no Lease


@functools.cache
def binaries() -> Path:
    """The folder of upstream's binaries, built now if this machine has not built them yet. A
    machine without Go cannot build them: the test fails (it does not skip) with the script's line."""
    if shutil.which("go") is None and not os.environ.get("KUBESCHED_UPSTREAM_CACHE"):
        pytest.fail("Go is not installed: scripts/build_upstream.sh builds upstream's binaries with it")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_upstream.sh")], capture_output=True, text=True, timeout=3000
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/build_upstream.sh failed:\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


# what kube-apiserver needs to serve what the embedded API server always serves: the beta
# scheduling.k8s.io/v1beta1 (Workload, PodGroup), which also changes its bootstrap RBAC policy
AS_KUBESCHED = ("--runtime-config=scheduling.k8s.io/v1beta1=true", "--feature-gates=GenericWorkload=true")


class ControlPlane:
    """etcd and kube-apiserver v1.37.2 on loopback; ``kubeconfig`` holds the static admin token
    (system:masters). The ServiceAccount admission plugin is off: no controller manager makes the
    namespaces' default accounts here."""

    def __init__(self, root: Path, users: str = "", args: tuple[str, ...] = (), bin_dir: Path | None = None) -> None:
        """``users``: more lines of the static token file (``token,user,uid[,"groups"]``);
        ``args``: more kube-apiserver flags; ``bin_dir``: the built binaries' folder (outside
        pytest, where ``binaries()`` cannot report a failed build)."""
        self.root = root
        self.users = users
        self.args = args
        self.bin = bin_dir or binaries()
        # three distinct ports (the kernel may hand a port just released to the next ask)
        ports: set[int] = set()
        while len(ports) < 3:
            ports.add(free_port())
        self.port, self.etcd_port, self.peer_port = list(ports)
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> ControlPlane:
        self.root.mkdir(parents=True, exist_ok=True)
        certs = self.root / "certs"
        certs.mkdir(exist_ok=True)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (self.root / "sa.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        (self.root / "sa.pub").write_bytes(
            key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        (self.root / "tokens.csv").write_text(f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\n{self.users}')
        etcd_log = open(self.root / "etcd.log", "wb")  # noqa: SIM115
        self.procs.append(
            subprocess.Popen(
                [
                    str(self.bin / "etcd"),
                    "--data-dir",
                    str(self.root / "etcd"),
                    "--listen-client-urls",
                    f"http://127.0.0.1:{self.etcd_port}",
                    "--advertise-client-urls",
                    f"http://127.0.0.1:{self.etcd_port}",
                    "--listen-peer-urls",
                    f"http://127.0.0.1:{self.peer_port}",
                    "--log-level",
                    "warn",
                ],
                stdout=etcd_log,
                stderr=etcd_log,
            )
        )
        api_log = open(self.root / "kube-apiserver.log", "wb")  # noqa: SIM115
        self.procs.append(
            subprocess.Popen(
                [
                    str(self.bin / "kube-apiserver"),
                    f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                    f"--secure-port={self.port}",
                    "--bind-address=127.0.0.1",
                    "--advertise-address=127.0.0.1",
                    f"--cert-dir={certs}",
                    f"--token-auth-file={self.root / 'tokens.csv'}",
                    "--authorization-mode=RBAC",
                    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                    f"--service-account-key-file={self.root / 'sa.pub'}",
                    f"--service-account-signing-key-file={self.root / 'sa.key'}",
                    "--service-cluster-ip-range=10.0.0.0/24",
                    "--disable-admission-plugins=ServiceAccount",
                    "--endpoint-reconciler-type=none",  # a loopback address has no endpoints to keep
                    "--v=1",
                    *self.args,
                ],
                stdout=api_log,
                stderr=api_log,
            )
        )
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "upstream", "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}],
            "users": [{"name": "admin", "user": {"token": ADMIN_TOKEN}}],
            "contexts": [{"name": "upstream", "context": {"cluster": "upstream", "user": "admin"}}],
            "current-context": "upstream",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"{p.args[0]} exited with {p.returncode}; see {self.root}")
            if self.kubectl("get", "--raw", "/readyz", check=False).returncode == 0:
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"kube-apiserver was not ready within 90 s; see {self.root}")

    def controller_manager(self, *controllers: str) -> subprocess.Popen[bytes]:
        """kube-controller-manager v1.37.2 running only ``controllers`` (kube-controller-manager's
        names, e.g. ``deployment-controller``) with the admin kubeconfig, no leader election and no
        serving port; stopped with the plane. Without kubelets the node lifecycle controller would
        taint and evict every node's pods, so a test never asks for it."""
        log = open(self.root / "kube-controller-manager.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                str(self.bin / "kube-controller-manager"),
                f"--kubeconfig={self.kubeconfig}",
                f"--controllers={','.join(controllers)}",
                "--leader-elect=false",
                "--secure-port=0",
                "--v=1",
            ],
            stdout=log,
            stderr=log,
        )
        self.procs.append(proc)
        return proc

    def snapshot(self, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
        """``kubesched snapshot`` of this cluster into ``out``, with ``flags``."""
        cmd = [*KUBESCHED, "snapshot", "--kubeconfig", str(self.kubeconfig), "-o", str(out), *flags]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.bin / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True,
            text=True,
            input=stdin,
            timeout=120,
        )
        if check:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str = ADMIN_TOKEN,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """One HTTPS request to kube-apiserver; the status code and the decoded JSON body."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # kube-apiserver's self-signed serving certificate
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")

    def apply(self, *objects: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    def get(self, *args: str) -> Any:
        return yaml.safe_load(self.kubectl("get", *args, "-o", "json").stdout)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        self.procs = []


# the schedulerName each side's pods name when both schedulers share one kube-apiserver
SIDES = {"up": "upstream-scheduler", "ks": "default-scheduler"}


@contextlib.contextmanager
def both_schedulers(
    plane: ControlPlane, root: Path, settings: str = "", verbosity: int = 0, ours_on: ControlPlane | None = None
) -> Iterator[ControlPlane]:
    """kube-scheduler v1.37.2 (schedulerName upstream-scheduler) and ``kubesched scheduler``
    (default-scheduler) on ``plane`` (kubesched's on ``ours_on`` if given: then neither sees the
    other's pods), neither electing a leader; ``settings``: more top-level lines of both
    schedulers' KubeSchedulerConfiguration. Their logs (at ``verbosity``, klog's ``-v``) are in
    ``root``."""
    config = root / "upstream-scheduler.yaml"
    config.write_text(REFERENCE_SCHEDULER.format(kubeconfig=plane.kubeconfig) + settings)
    kubeconfig = (ours_on or plane).kubeconfig
    ours = ["scheduler", "--kubeconfig", str(kubeconfig), "--secure-port=0", "--leader-elect=false"]
    ours += [f"--v={verbosity}"] if verbosity else []
    ours += ["--config", str(root / "kubesched.yaml")] if settings else []
    if settings:
        (root / "kubesched.yaml").write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + settings
        )
    procs = [
        subprocess.Popen(
            [str(plane.bin / "kube-scheduler"), f"--config={config}", "--secure-port=0", f"-v={verbosity}"],
            stdout=open(root / "kube-scheduler.log", "wb"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
        ),
        subprocess.Popen(
            [*KUBESCHED, *ours],
            stdout=open(root / "kubesched.log", "wb"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
        ),
    ]
    try:
        yield plane
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
