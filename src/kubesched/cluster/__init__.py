"""The cluster: an in-process store with Kubernetes API semantics and the client interface to it."""
