"""The API server's data directory: created private (0700, files 0600), and every way it can be
unusable (empty, corrupt or misplaced state, a read-only directory, a damaged certificate)
ends in one line naming the file and the problem and exit 2, with nothing existing overwritten."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from tests.live import KUBESCHED, Server, free_port, mount_tmpfs, unmount


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
        (
            lambda d: ((d / "token").write_text("\n"), (d / "token").chmod(0o600)),
            "token: empty: it should hold the API server's token",
        ),
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


def test_a_second_server_on_the_same_data_directory_is_refused_and_changes_nothing(tmp_path: Path):
    """Two servers on one directory both ran: the second rewrote the kubeconfig, commits failed
    with UNIQUE constraint errors and two schedulers bound the same pods."""
    data = tmp_path / "data"
    server = Server(data, command="up").start()
    try:
        kubeconfig = (data / "kubeconfig").read_bytes()
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubesched.cli",
                "up",
                "--data-dir",
                str(data),
                "--port",
                str(free_port()),
                "--ui-port",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        line = one_line(second)
        assert line == (
            f"kubesched: error: {data}: the data directory is in use by process {server.proc.pid} (kubesched up); "
            "stop it, or give this one another --data-dir"
        )
        assert (data / "kubeconfig").read_bytes() == kubeconfig
        assert server.request("GET", "/api/v1/namespaces/default")[0] == 200  # the first goes on
    finally:
        server.stop()
    # the lock goes with its process: a later server starts (also after kill -9, the kernel drops it)
    again = Server(data).start()
    again.stop(signal.SIGKILL)
    Server(data).start().stop()


def test_a_loose_data_directory_is_tightened_to_0700(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    server = Server(data).start()
    try:
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("token", "the API server's token"),
        ("sa.key", "the service account signing key"),
        ("server.key", "serving key"),
    ],
)
def test_a_secret_others_can_read_is_refused(tmp_path: Path, name: str, what: str):
    data = tmp_path / "data"
    Server(data).start().stop()
    (data / name).chmod(0o644)
    assert one_line(start(data)) == (
        f"kubesched: error: {data / name}: mode 0644: others may read the {what}; "
        f"make it the owner's alone (chmod 600 {data / name})"
    )


def test_a_secret_that_is_a_link_is_refused(tmp_path: Path):
    data = tmp_path / "data"
    Server(data).start().stop()
    elsewhere = tmp_path / "elsewhere-token"
    elsewhere.write_text((data / "token").read_text())
    elsewhere.chmod(0o600)
    (data / "token").unlink()
    (data / "token").symlink_to(elsewhere)
    assert one_line(start(data)) == (
        f"kubesched: error: {data / 'token'}: a link: the the API server's token must be a file of its own"
    )


@pytest.mark.parametrize("planted", ["kubeconfig", ".kubeconfig.tmp"])
def test_the_kubeconfig_is_written_without_following_a_planted_link(tmp_path: Path, planted: str):
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (data / planted).symlink_to(victim)
    server = Server(data)
    server.start()
    try:
        assert victim.read_text() == "precious\n"
        kubeconfig = data / "kubeconfig"
        assert not kubeconfig.is_symlink() and stat.S_IMODE(kubeconfig.lstat().st_mode) == 0o600
    finally:
        server.stop()


def test_up_announces_nothing_until_the_ui_port_is_bound(tmp_path):
    """A taken --ui-port: one line naming it, exit 2, and neither the API server's address nor a
    kubeconfig left behind (nothing was announced that does not work)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data = tmp_path / "data"
        done = subprocess.run(
            [*KUBESCHED, "up", "--data-dir", str(data), "--port", str(free_port()), "--ui-port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert "API server on" not in done.stdout
    assert one_line(done) == f"kubesched: error: cannot listen on 127.0.0.1:{port} (--ui-port): Address already in use"
    assert not (data / "kubeconfig").exists()
