"""The API server's data directory: created private (0700, files 0600), and every way it can be
unusable (empty, corrupt or misplaced state, a read-only directory, a damaged certificate)
ends in one line naming the file and the problem and exit 2, with nothing existing overwritten."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from tests.live import Server, free_port, mount_tmpfs, unmount


def start(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "apiserver", "--data-dir", str(data_dir), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kubesched: error: "), out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    return lines[0]


def test_a_new_data_directory_and_its_files_are_private(tmp_path: Path):
    (tmp_path / "new").mkdir()
    data = tmp_path / "new" / "data"
    server = Server(data).start()
    try:
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        for name in ("state.db", "kubeconfig", "token", "server.key", "server.crt", "ca.crt"):
            assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda d: (d / "state.db").write_bytes(b""), "state.db: empty (0 bytes): not a kubesched store"),
        (
            lambda d: (d / "state.db").write_bytes(os.urandom(8192)),
            "state.db: cannot open the store: file is not a database",
        ),
        (lambda d: (d / "state.db").mkdir(), "state.db: not a regular file"),
        (lambda d: (d / "token").write_text("\n"), "token: empty: it should hold the API server's token"),
    ],
    ids=["empty-state", "corrupt-state", "state-is-a-directory", "empty-token"],
)
def test_an_unusable_store_is_one_line_and_left_as_it_was(tmp_path: Path, setup, expected):
    data = tmp_path / "data"
    data.mkdir()
    setup(data)
    before = {p.name: (p.read_bytes() if p.is_file() else None) for p in data.iterdir()}
    line = one_line(start(data))
    assert expected in line and str(data) in line
    assert {p.name: (p.read_bytes() if p.is_file() else None) for p in data.iterdir() if p.name in before} == before


def test_a_damaged_serving_certificate_is_one_line(tmp_path: Path):
    data = tmp_path / "data"
    server = Server(data).start()
    server.stop()
    (data / "server.crt").write_text("-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n")
    line = one_line(start(data))
    assert "server.crt: not a serving certificate kubesched made" in line
    assert "garbage" in (data / "server.crt").read_text()


def test_a_data_directory_that_is_a_file_is_one_line(tmp_path: Path):
    path = tmp_path / "file"
    path.write_text("x")
    assert "not a directory; --data-dir must name a directory" in one_line(start(path))


def test_a_read_only_data_directory_is_one_line(tmp_path: Path):
    mount = tmp_path / "ro"
    mount_tmpfs(mount, "size=1m,ro")
    try:
        assert "the data directory is not writable" in one_line(start(mount))
    finally:
        unmount(mount)
