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


def test_detach_leaves_up_running_and_reports_a_start_that_fails(tmp_path: Path) -> None:
    """``up --detach`` returns once the server has announced itself, which then serves until
    ``down``; a second ``--detach`` on the same directory is refused before it starts (the first
    one's log left as it is); a server that exits while starting is reported with the log's last
    lines, and exits 2."""
    data = tmp_path / "cluster"
    port = str(free_port())
    cmd = [*KUBESCHED, "up", "--data-dir", str(data), "--port", port, "--ui-port", "0", "--detach"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    first, last = done.stdout.splitlines()[0], done.stdout.splitlines()[-1]
    assert first.startswith(f"kubesched: API server on https://127.0.0.1:{port}")
    assert last.startswith("kubesched: running in the background as process ")
    kubeconfig = yaml.safe_load((data / "kubeconfig").read_text())
    assert kubeconfig["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{port}"
    log = (data / "server.log").read_text()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert again.returncode == 2
    assert again.stderr.startswith(f"kubesched: error: {data}: the data directory is in use by process ")
    assert (data / "server.log").read_text().startswith(log)
    stopped = down(data)
    assert stopped.returncode == 0 and stopped.stdout.startswith("kubesched: stopped process ")
    bad = [*KUBESCHED, "up", "--data-dir", str(data), "--port", port, "--detach", "--config", str(tmp_path / "no.yaml")]
    failed = subprocess.run(bad, capture_output=True, text=True, timeout=180)
    assert failed.returncode == 2
    assert failed.stderr.startswith(f"kubesched: error: {data / 'server.log'}: the server exited with code 2")
    assert "no.yaml" in failed.stderr
