"""The API server's data directory, as etcd keeps its own: private to its owner (0700, files
0600), held by one process at a time through a lock the kernel drops when that process ends,
and its secrets (the admin token, the signing and serving keys) refused when anyone else could
read them or when they are links. Every refusal is one InputError naming the path."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
import sys
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
