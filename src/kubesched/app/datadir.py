"""The API server's data directory, as etcd keeps its own: private to its owner (0700, files
0600), held by one process at a time through a lock the kernel drops when that process ends,
and its secrets (the admin token, the signing and serving keys) refused when anyone else could
read them or when they are links. Every refusal is one InputError naming the path."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

from kubesched.errors import InputError

log = logging.getLogger("kubesched")
LOCK_FILE = "lock"


def prepare(data_dir: Path) -> None:
    """Create the directory (0700), or take an existing one of ours and tighten its mode."""
    if data_dir.is_symlink() and not data_dir.exists():
        raise InputError("a link to nothing; --data-dir must name a directory", file=str(data_dir))
    if data_dir.exists() and not data_dir.is_dir():
        raise InputError("not a directory; --data-dir must name a directory", file=str(data_dir))
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = data_dir.stat()
    except OSError as exc:
        raise InputError(f"cannot create the data directory: {exc.strerror or exc}", file=str(data_dir)) from None
    if st.st_uid != os.geteuid():
        raise InputError(
            f"owned by uid {st.st_uid}, not by this user ({os.geteuid()}): it holds the cluster's keys",
            file=str(data_dir),
        )
    if not os.access(data_dir, os.W_OK | os.X_OK):
        raise InputError("the data directory is not writable", file=str(data_dir))
    if stat.S_IMODE(st.st_mode) & 0o077:
        log.debug("data directory %s had mode %04o; tightened to 0700", data_dir, stat.S_IMODE(st.st_mode))
        try:
            data_dir.chmod(0o700)
        except OSError as exc:
            raise InputError(f"cannot make it private (0700): {exc.strerror or exc}", file=str(data_dir)) from None


class DataDirLock:
    """An exclusive ``flock`` on ``DATA_DIR/lock`` for the life of the process, with the holder's
    PID and command written in it; a second server on the same directory is refused."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise InputError(f"cannot open the lock: {exc.strerror or exc}", file=str(self.path)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise InputError(
                f"the data directory is in use by {holder}; stop it, or give this one another --data-dir",
                file=str(self.path.parent),
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} ({' '.join(['kubesched', *sys.argv[1:2]])})\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def check_private(path: Path, what: str) -> None:
    """A secret's file: a regular file (not a link), this user's, readable by this user only."""
    try:
        st = path.lstat()
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", file=str(path)) from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"a link: the {what} must be a file of its own", file=str(path))
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"not a regular file: it should hold the {what}", file=str(path))
    if st.st_uid != os.geteuid():
        raise InputError(f"owned by uid {st.st_uid}, not by this user: the {what} must be yours", file=str(path))
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise InputError(
            f"mode {mode:04o}: others may read the {what}; make it the owner's alone (chmod 600 {path})",
            file=str(path),
        )


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` as a 0600 file at ``path`` without following a link there: written aside
    (refusing a link in its place) and renamed over ``path``, so a reader never sees half of it."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None


# what a data directory of ours holds: ``down --delete`` removes no directory without one of these
STATE_FILE = "state.db"


def holder(data_dir: Path) -> int | None:
    """The PID of the server holding ``data_dir``'s lock; None when none does."""
    path = data_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot open the lock: {exc.strerror or exc}", file=str(path)) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: a server runs on it
            text = os.pread(fd, 512, 0).decode(errors="replace")
            found = re.match(r"process (\d+)", text)
            if found is None:
                raise InputError(f"in use by {text.strip() or 'another process'}", file=str(data_dir)) from None
            return int(found.group(1))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def stop_server(data_dir: Path, timeout: float = 30.0) -> int | None:
    """Stop the server running on ``data_dir`` as Ctrl-C does (SIGTERM: every acknowledged write
    is already stored) and wait for it to let go of the directory; its PID, or None when none ran."""
    pid = holder(data_dir)
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # ended meanwhile
    except PermissionError:
        raise InputError(f"process {pid} holds it and is not this user's to stop", file=str(data_dir)) from None
    deadline = time.monotonic() + timeout
    while holder(data_dir) is not None:
        if time.monotonic() > deadline:
            raise InputError(f"process {pid} did not stop within {timeout:.0f}s", file=str(data_dir))
        time.sleep(0.05)
    return pid


def delete(data_dir: Path) -> bool:
    """Remove a stopped server's data directory (the cluster's state, kubeconfig and keys);
    False when there is none. A directory that is not one of ours is refused, not removed."""
    if not data_dir.exists():
        return False
    if not data_dir.is_dir() or data_dir.is_symlink():
        raise InputError("not a data directory", file=str(data_dir))
    if not (data_dir / LOCK_FILE).exists() and not (data_dir / STATE_FILE).exists():
        raise InputError("holds no kubesched state (no lock, no state.db): not removed", file=str(data_dir))
    if holder(data_dir) is not None:
        raise InputError("a server runs on it: stop it first", file=str(data_dir))
    shutil.rmtree(data_dir)
    return True
