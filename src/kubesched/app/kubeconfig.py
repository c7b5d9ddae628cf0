"""The kubeconfig ``kubesched up`` / ``apiserver`` write for kubectl and the clients, and the
bearer token they require (kept in the data directory, so a restart keeps it valid); and the
check of a kubeconfig a command is pointed at (a light module: ``kubesched node`` and
``explain`` start without the scheduler's imports)."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import yaml

from kubesched.app.datadir import check_private, write_private
from kubesched.errors import InputError


def _load_or_create_secret(path: Path, what: str) -> str:
    """A secret kept in the data directory (0600), made on first use; one clear InputError when
    the file is empty, unusable, a link, or readable by others."""
    try:
        if path.exists() or path.is_symlink():
            check_private(path, what)
            secret = path.read_text().strip()
            if secret:
                return secret
            raise InputError(f"empty: it should hold {what}; remove it to make a new one", file=str(path))
        secret = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secret + "\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot use the {path.name} file: {getattr(exc, 'strerror', None) or exc}", file=str(path)
        ) from None
    return secret


def load_or_create_token(data_dir: Path) -> str:
    """The admin bearer token of the kubeconfig."""
    return _load_or_create_secret(data_dir / "token", "the API server's token")


def load_or_create_signing_key(data_dir: Path) -> bytes:
    """The key service account tokens are signed with."""
    return _load_or_create_secret(data_dir / "sa.key", "the service account signing key").encode()


def write_kubeconfig(path: Path, server: str, token: str, ca_pem: bytes, name: str = "kubesched") -> None:
    cluster = {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }
    # written aside and renamed: a client polling for the file never reads half of it, and a link
    # planted at either name is replaced, never followed
    write_private(path, yaml.safe_dump(config, sort_keys=False).encode())


def check_kubeconfig(path: str) -> None:
    """One clear line for a kubeconfig that is missing or is not one, before the client reads it."""
    if not Path(path).is_file():
        raise InputError("kubeconfig not found", file=path)
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"not a kubeconfig: {str(exc).splitlines()[0]}", file=path) from None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise InputError("not a kubeconfig: expected a mapping with clusters, users and contexts", file=path)
