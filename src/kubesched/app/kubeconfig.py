"""The kubeconfig ``kubesched up`` / ``apiserver`` write for kubectl and the clients, and the
bearer token they require (kept in the data directory, so a restart keeps it valid)."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import yaml

from kubesched.errors import InputError


def load_or_create_token(data_dir: Path) -> str:
    path = data_dir / "token"
    try:
        if path.exists():
            token = path.read_text().strip()
            if token:
                return token
            raise InputError(
                "empty: it should hold the API server's token; remove it to make a new one", file=str(path)
            )
        token = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(token + "\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot use the token file: {getattr(exc, 'strerror', None) or exc}", file=str(path)
        ) from None
    return token


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
    # written aside and renamed: a client polling for the file never reads half of it
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            yaml.safe_dump(config, fh, sort_keys=False)
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write the kubeconfig: {exc.strerror or exc}", file=str(path)) from None
