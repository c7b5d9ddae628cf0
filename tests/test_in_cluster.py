"""In-cluster configuration (client-go's ``rest.InClusterConfig``): the service account's token,
CA and ``KUBERNETES_SERVICE_HOST``/``_PORT``; the token re-read when the projected file rotates;
one line when not in a cluster."""

from __future__ import annotations

import asyncio
import datetime

import pytest

from kubesched.client import connection
from kubesched.errors import InputError


def test_token_is_read_again_when_the_projected_file_rotates(tmp_path, monkeypatch):
    from kubesched.app.certs import ensure_certs

    ca, _, _ = ensure_certs(tmp_path, "127.0.0.1")
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("first")
    (sa / "ca.crt").write_bytes(ca.read_bytes())
    monkeypatch.setenv(connection.DIR_ENV, str(sa))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")

    async def check() -> None:
        api = await connection.api_client(None)
        cfg = api.configuration
        assert cfg.host == "https://10.0.0.1:443"
        assert cfg.api_key["BearerToken"] == "Bearer first"
        (sa / "token").write_text("second")
        later = datetime.datetime.now() + datetime.timedelta(minutes=2)

        class Clock(datetime.datetime):
            @classmethod
            def now(cls, tz=None):  # type: ignore[override]
                return later

        monkeypatch.setattr("kubernetes_asyncio.config.incluster_config.datetime.datetime", Clock)
        cfg.refresh_api_key_hook(cfg)  # what every request does first
        assert cfg.api_key["BearerToken"] == "Bearer second"
        await api.close()

    asyncio.run(check())


def test_not_in_a_cluster_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(InputError, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"):
        connection.check_in_cluster()
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv(connection.DIR_ENV, str(tmp_path))
    with pytest.raises(InputError, match="service account's file is missing") as err:
        connection.check_in_cluster()
    assert str(tmp_path / "token") in str(err.value)
