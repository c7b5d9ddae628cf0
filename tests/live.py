"""Real processes for the live tests: ``kubesched apiserver`` / ``scheduler`` on loopback, and a
small synchronous HTTPS client with the server's token and CA for checking status codes and bodies."""

from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

KUBESCHED = [sys.executable, "-m", "kubesched.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ``kubesched apiserver`` (or ``up``) process with its own data directory."""

    def __init__(
        self,
        data_dir: Path,
        *,
        command: str = "apiserver",
        nodes: int = 0,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
    ):
        self.data_dir = data_dir
        self.env = env  # more environment for the process (PYTHONPATH to a plugin package)
        self.port = free_port()
        self.command = command
        self.nodes = nodes
        self.args = args or []
        self.ui_port = 0
        if command == "up" and "--ui-port" not in self.args:  # the web UI on a free port, not 3000
            self.ui_port = free_port()
            self.args = [*self.args, "--ui-port", str(self.ui_port)]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    def start(self) -> Server:
        (self.data_dir / "kubeconfig").unlink(missing_ok=True)
        log = open(self.data_dir.parent / f"{self.data_dir.name}.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                *KUBESCHED,
                self.command,
                "--data-dir",
                str(self.data_dir),
                "--port",
                str(self.port),
                "--nodes",
                str(self.nodes),
                *self.args,
            ],
            stdout=log,
            stderr=log,
            env={**os.environ, **self.env} if self.env else None,
        )
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}")
                if self.kubeconfig.exists():
                    try:
                        if self.request("GET", "/healthz", raw=True)[0] == 200:
                            return self
                    except OSError:
                        pass
                time.sleep(0.1)
            raise RuntimeError("server did not start")
        except BaseException:  # never leave a server behind a failed start
            self.proc.kill()
            self.proc.wait(10)
            raise

    def ui_login_url(self) -> str:
        """The one-time login address ``kubesched up`` printed for its web UI."""
        log = (self.data_dir.parent / f"{self.data_dir.name}.log").read_text(errors="replace")
        found = [
            line.rsplit(" ", 1)[-1] for line in log.splitlines() if "web UI on" in line and "log in once at" in line
        ]
        assert found, "kubesched up printed no login address"
        return found[-1]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(15)

    # -- a plain HTTPS client ----------------------------------------------------------------
    def _config(self) -> tuple[str, str, ssl.SSLContext]:
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        return cluster["server"], cfg["users"][0]["user"]["token"], ctx

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        token: str | None = None,
        raw: bool = False,
    ) -> tuple[int, Any]:
        server, default_token, ctx = self._config()
        data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if token is None:
            token = default_token
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
                code, payload, ctype = resp.status, resp.read(), resp.headers.get("Content-Type")
                self.last_headers = resp.headers
        except urllib.error.HTTPError as err:
            code, payload, ctype = err.code, err.read(), err.headers.get("Content-Type")
            self.last_headers = err.headers
        if raw:
            return code, payload
        assert (ctype or "").split(";")[0] == "application/json", (code, ctype, payload[:200])
        return code, json.loads(payload)


def mount_tmpfs(path: Path, options: str) -> None:
    """Mount a tmpfs at ``path`` (a small or read-only disk for a test), or skip the test with one
    line when this machine does not allow it (it needs root)."""
    import pytest

    path.mkdir(exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=False)


def wait_for(fn: Any, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll ``fn`` until it returns something truthy (and return that), or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s")


UPSTREAM_KUBECTL = Path(__file__).resolve().parent.parent / ".cache" / "upstream" / "v1.37.2" / "kubectl"


def kubectl_binaries() -> dict[str, str]:
    """The real kubectl builds on this machine, by minor version: the image's google-cloud-sdk ones,
    and v1.37.2 and v1.32.13, built from their Go modules by scripts/build_upstream.sh (which .ci/run
    runs)."""
    found = {}
    for folder in ("/usr/lib/google-cloud-sdk/bin", "/usr/local/google-cloud-sdk/bin"):
        for minor in range(20, 40):
            path = os.path.join(folder, f"kubectl.1.{minor}")
            if os.access(path, os.X_OK):
                found.setdefault(f"1.{minor}", path)
    if os.access(UPSTREAM_KUBECTL, os.X_OK):
        found.setdefault("1.37", str(UPSTREAM_KUBECTL))
    older = UPSTREAM_KUBECTL.with_name("kubectl-1.32")  # built beside it, from upstream/kubectl132
    if os.access(older, os.X_OK):
        found.setdefault("1.32", str(older))
    plain = shutil.which("kubectl")
    if plain and not found:
        found["default"] = plain
    return found


_HOMES: list[str] = []


@atexit.register
def _remove_homes() -> None:
    for home in _HOMES:
        shutil.rmtree(home, ignore_errors=True)


def temp_home() -> str:
    """A HOME for one kubectl session (its discovery cache), removed when the test session ends."""
    home = tempfile.mkdtemp(prefix="kubectl-home-")
    _HOMES.append(home)
    return home
