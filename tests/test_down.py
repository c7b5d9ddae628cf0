"""``kubesched down`` stops the ``up`` running on a data directory as Ctrl-C does, and with
``--delete`` removes its state, as ``kind delete cluster`` does; a restarted ``up`` says that it
kept the cluster and applied its PATHS again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from live import free_port

KUBESCHED = [sys.executable, "-m", "kubesched"]


def up(data: Path, *paths: Path) -> tuple[subprocess.Popen[str], list[str]]:
    """``kubesched up`` on ``data``, and the lines it announced (a second one on a restart)."""
    restart = data.joinpath("state.db").exists()
    proc = subprocess.Popen(
        [*KUBESCHED, "up", "--data-dir", str(data), "--port", str(free_port()), "--ui-port", "0", *map(str, paths)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    lines = [proc.stdout.readline().rstrip()]
    if restart:
        lines.append(proc.stdout.readline().rstrip())
    return proc, lines


def down(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBESCHED, "down", "--data-dir", str(data), *args], capture_output=True, text=True, timeout=60
    )


def test_down_stops_up_and_delete_starts_afresh(tmp_path: Path) -> None:
    data = tmp_path / "data"
    manifest = tmp_path / "ns.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
    proc, lines = up(data, manifest)
    try:
        assert lines[0].startswith("kubesched: API server on https://")
        r = down(data)
        assert r.returncode == 0 and r.stdout == f"kubesched: stopped process {proc.pid} on {data}\n"
        assert proc.wait(timeout=30) == 0  # stopped as Ctrl-C stops it
    finally:
        proc.kill()
    assert down(data).stdout == f"kubesched: no server runs on {data}\n"

    proc, lines = up(data, manifest)  # the same data directory: the cluster is kept
    try:
        assert lines[1] == (
            f"kubesched: the cluster kept in {data} from its last run; {manifest} applied again (objects that "
            f"exist were left as they are); `kubesched down --data-dir {data} --delete` starts afresh"
        )
        r = down(data, "--delete")
        assert r.returncode == 0
        assert r.stdout == f"kubesched: stopped process {proc.pid} on {data}\nkubesched: deleted {data}\n"
        assert not data.exists()
    finally:
        proc.kill()
    r = down(data, "--delete")
    assert (r.returncode, r.stdout) == (0, f"kubesched: no server runs on {data}\nkubesched: {data} does not exist\n")


def test_delete_refuses_a_directory_that_is_not_a_clusters(tmp_path: Path) -> None:
    other = tmp_path / "photos"
    other.mkdir()
    (other / "a.jpg").write_bytes(b"")
    r = down(other, "--delete")
    assert r.returncode != 0 and "holds no kubesched state (no lock, no state.db): not removed" in r.stderr
    assert (other / "a.jpg").exists()
