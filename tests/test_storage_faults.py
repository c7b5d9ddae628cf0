"""The API server on a disk that fills up, over real HTTPS: a write whose commit fails is
answered 500 with the cause, is not served by GET, list or watch, and the server keeps serving
and stores the next write once space is back (a real tmpfs of a few MiB, mounted by the test)."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

import pytest
from tests.live import Server, mount_tmpfs, unmount


@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "disk"
    mount_tmpfs(mount, "size=16m")
    yield mount
    unmount(mount)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb") as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
            f.flush()
    return filler


def configmap(name: str, size: int = 10) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v" * size}}


def test_a_write_that_cannot_be_stored_is_a_500_and_leaves_nothing_behind(small_disk: Path):
    server = Server(small_disk / "data").start()
    try:
        path = "/api/v1/namespaces/default/configmaps"
        assert server.request("POST", path, configmap("before"))[0] == 201
        _, listed = server.request("GET", path)
        rv = int(listed["metadata"]["resourceVersion"])
        seen: list[dict] = []

        def watch() -> None:
            _code, raw = server.request("GET", f"{path}?watch=1&resourceVersion={rv}&timeoutSeconds=4", raw=True)
            seen.extend(json.loads(line) for line in raw.splitlines() if line.strip())

        watcher = threading.Thread(target=watch)
        watcher.start()
        filler = fill(small_disk)
        code, body = server.request("POST", path, configmap("phantom", 1_000_000))
        assert code == 500, body
        assert body["reason"] == "InternalError" and "database or disk is full" in body["message"]
        assert server.request("GET", f"{path}/phantom")[0] == 404
        _, listed = server.request("GET", path)
        names = [o["metadata"]["name"] for o in listed["items"] if o["metadata"]["name"] != "kube-root-ca.crt"]
        assert names == ["before"]  # (the root CA publisher's ConfigMap aside)
        filler.unlink()
        code, after = server.request("POST", path, configmap("after"))
        assert code == 201, after
        assert int(after["metadata"]["resourceVersion"]) > rv + 1  # the failed write's revision is not reused
        watcher.join(10)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [("ADDED", "after")]
    finally:
        server.stop()
    restarted = Server(small_disk / "data").start()
    try:
        _, listed = restarted.request("GET", "/api/v1/namespaces/default/configmaps")
        assert sorted(
            o["metadata"]["name"] for o in listed["items"] if o["metadata"]["name"] != "kube-root-ca.crt"
        ) == [
            "after",
            "before",
        ]
    finally:
        restarted.stop()
