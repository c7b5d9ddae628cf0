"""The scheduler's way to the cluster: the ``ClusterClient`` interface and its implementations,
in process over the embedded Store (``inprocess``) and over HTTP to any API server (``remote``)."""

from kubesched.client.inprocess import InProcessClient
from kubesched.client.interface import ClusterClient

__all__ = ["ClusterClient", "InProcessClient"]
