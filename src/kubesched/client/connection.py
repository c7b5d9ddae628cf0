"""How a client reaches the API server (client-go's ``rest.Config``): a kubeconfig file, or, with
none, the pod's service account as ``rest.InClusterConfig`` reads it (the projected token and
CA under ``/var/run/secrets/kubernetes.io/serviceaccount``, ``KUBERNETES_SERVICE_HOST`` and
``_PORT``), the token re-read as it rotates."""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.config import new_client_from_config
from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader

from kubesched.errors import InputError

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# where the service account's files are when not at the standard place (tests, sidecars)
DIR_ENV = "KUBESCHED_SERVICEACCOUNT_DIR"
NOT_IN_CLUSTER = (
    "no --kubeconfig and not in a cluster: unable to load in-cluster configuration, "
    "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"
)


def service_account_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or SERVICE_ACCOUNT_DIR)


def check_in_cluster() -> None:
    """One clear line when the in-cluster configuration cannot be used."""
    if not os.environ.get("KUBERNETES_SERVICE_HOST") or not os.environ.get("KUBERNETES_SERVICE_PORT"):
        raise InputError(NOT_IN_CLUSTER)
    for name in ("token", "ca.crt"):
        path = service_account_dir() / name
        if not path.is_file():
            raise InputError("the service account's file is missing (is the token mounted?)", file=str(path))


def in_cluster_token() -> str:
    return (service_account_dir() / "token").read_text().strip()


async def api_client(kubeconfig: str | None, context: str | None = None) -> k8s.ApiClient:
    """A kubernetes_asyncio client for the kubeconfig (its ``context``, else its current one), or
    in-cluster when it is None."""
    if kubeconfig is not None:
        return await new_client_from_config(config_file=kubeconfig, context=context)
    check_in_cluster()
    base = service_account_dir()
    cfg = k8s.Configuration()
    InClusterConfigLoader(str(base / "token"), str(base / "ca.crt"), try_refresh_token=True).load_and_set(cfg)
    return k8s.ApiClient(configuration=cfg)
