"""``--detach``: a server started in the background, as ``kind create cluster`` leaves its cluster
running: the same command runs as a process of its own session, its output in the data directory's
``server.log``; this one returns once the server has announced itself (every port bound), printing
its lines, or fails with the log's end when it exits first. ``kubesched down`` stops it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from kubesched.app import datadir
from kubesched.errors import InputError

LOG_FILE = "server.log"
READY = "kubesched: API server on "
START_TIMEOUT = 120.0


def run_detached(data_dir: Path, argv: list[str], timeout: float = START_TIMEOUT) -> list[str]:
    """Start ``kubesched ARGV`` in the background; its announcement lines once it is up."""
    datadir.prepare(data_dir)
    running = datadir.holder(data_dir)
    if running is not None:  # its log is left as it is
        raise InputError(
            f"the data directory is in use by process {running}; `kubesched down --data-dir {data_dir}` stops it",
            file=str(data_dir),
        )
    log_path = data_dir / LOG_FILE
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubesched.cli", *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # not stopped by the terminal's Ctrl-C, nor when this shell exits
        )
    deadline = time.monotonic() + timeout
    while True:
        text = log_path.read_text(errors="replace")
        if READY in text:
            time.sleep(0.2)  # the lines after the first are printed with it
            lines = [ln for ln in log_path.read_text(errors="replace").splitlines() if ln.startswith("kubesched: ")]
            return [
                *lines,
                f"kubesched: running in the background as process {proc.pid} (log: {log_path}); "
                f"`kubesched down --data-dir {data_dir}` stops it",
            ]
        code = proc.poll()
        if code is not None:
            tail = "\n".join(text.strip().splitlines()[-5:])
            raise InputError(f"the server exited with code {code} before it was up:\n{tail}", file=str(log_path))
        if time.monotonic() > deadline:
            proc.terminate()
            raise InputError(f"the server was not up within {timeout:.0f} s", file=str(log_path))
        time.sleep(0.1)
