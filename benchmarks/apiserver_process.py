"""``kubesched apiserver`` as its own process for a benchmark: started on a free loopback port
with a fresh data directory, its kubeconfig read for the address, CA and admin token, stopped when
the benchmark is done (its log kept beside the data)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import ssl
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import yaml

KUBESCHED = [sys.executable, "-m", "kubesched.cli"]


@dataclass(frozen=True)
class Running:
    base: str  # https://127.0.0.1:PORT
    ssl: ssl.SSLContext
    admin: dict[str, str]  # the admin token's Authorization header
    data: Path
    pid: int


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def apiserver(*flags: str, files: dict[str, str] | None = None) -> AsyncIterator[Running]:
    """The server with ``flags`` (``files``: written into a folder first; ``{dir}`` in a flag
    names it), up and answering /healthz."""
    root = Path(tempfile.mkdtemp(prefix="kubesched-bench-"))
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    data = root / "data"
    port = free_port()
    log = open(root / "server.log", "wb")  # noqa: SIM115 - the server's, closed with it
    proc = subprocess.Popen(
        [*KUBESCHED, "apiserver", "--data-dir", str(data), "--port", str(port), *(f.format(dir=root) for f in flags)],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        kubeconfig = data / "kubeconfig"
        for _ in range(300):
            if kubeconfig.exists():
                break
            await asyncio.sleep(0.1)
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        running = Running(
            cluster["server"], ctx, {"Authorization": f"Bearer {cfg['users'][0]['user']['token']}"}, root, proc.pid
        )
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
            for _ in range(100):
                try:
                    async with session.get(running.base + "/healthz", headers=running.admin) as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
        yield running
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
