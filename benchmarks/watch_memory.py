"""Watches that never read: ``kubesched apiserver`` holding large objects, watched by clients that
send the request and then read nothing (the tenant of the robustness trial). Prints the server's
RSS before, its peak while the watchers hang, and after they are closed.

    python benchmarks/watch_memory.py                      # 60 ConfigMaps of ~1 MB, 20 watchers
    python benchmarks/watch_memory.py --objects 60 --watchers 20 --hold 20

The server bounds each watcher by bytes in flight (writes of ~64 KiB, each waiting for the
client) and by time (a client that takes nothing for 10 s is disconnected), so the peak stays
near the stored objects' own size. The last line printed is JSON.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from apiserver_load import free_port, rss_mib  # the other API server benchmark's helpers


class Client:
    def __init__(self, kubeconfig: Path) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        self.server = cluster["server"]
        self.token = cfg["users"][0]["user"]["token"]
        self.ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())

    def post(self, path: str, body: dict[str, Any]) -> int:
        req = urllib.request.Request(self.server + path, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, context=self.ctx, timeout=60) as resp:
            return int(resp.status)

    def silent_watch(self, path: str) -> ssl.SSLSocket:
        """A TLS connection that sends one watch request and never reads the answer."""
        host, port = self.server.removeprefix("https://").rsplit(":", 1)
        raw = socket.create_connection((host, int(port)))
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel keeps little for us
        sock = self.ctx.wrap_socket(raw, server_hostname=host)
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {self.token}\r\n"
            "Accept: application/json\r\n\r\n".encode()
        )
        return sock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, default=60, help="ConfigMaps to store")
    ap.add_argument("--size", type=int, default=1_000_000, help="bytes of data in each")
    ap.add_argument("--watchers", type=int, default=20, help="watchers that never read")
    ap.add_argument("--hold", type=float, default=15.0, help="seconds the watchers stay open")
    args = ap.parse_args()
    data = Path(tempfile.mkdtemp(prefix="kubesched-watch-memory-")) / "data"
    port = free_port()
    log = open(data.parent / "server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", "apiserver", "--data-dir", str(data), "--port", str(port)],
        stdout=log,
        stderr=log,
    )
    try:
        kubeconfig = data / "kubeconfig"
        deadline = time.monotonic() + 60
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        client = Client(kubeconfig)
        filler = "x" * args.size
        for i in range(args.objects):
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"big-{i}"}, "data": {"d": filler}}
            assert client.post("/api/v1/namespaces/default/configmaps", cm) == 201
        stored = args.objects * args.size / 2**20
        before = rss_mib(proc.pid)
        watchers = [client.silent_watch("/api/v1/configmaps?watch=1") for _ in range(args.watchers)]
        peak = before
        end = time.monotonic() + args.hold
        while time.monotonic() < end:
            peak = max(peak, rss_mib(proc.pid))
            time.sleep(0.2)
        for w in watchers:
            w.close()
        time.sleep(3.0)
        after = rss_mib(proc.pid)
        print(f"stored: {stored:.0f} MiB in {args.objects} ConfigMaps; {args.watchers} watchers that never read")
        print(f"server RSS: before {before:.0f} MiB, peak {peak:.0f} MiB, after close {after:.0f} MiB")
        print(
            json.dumps(
                {
                    "objects": args.objects,
                    "object_bytes": args.size,
                    "watchers": args.watchers,
                    "rss_before_mib": round(before),
                    "rss_peak_mib": round(peak),
                    "rss_after_close_mib": round(after),
                    "cpus": os.cpu_count(),
                }
            )
        )
    finally:
        proc.terminate()
        proc.wait(15)


if __name__ == "__main__":
    main()
