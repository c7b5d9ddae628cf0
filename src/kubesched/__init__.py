"""kubesched: the Kubernetes scheduler rebuilt in Python, faithful to kube-scheduler v1.37."""

__version__ = "0.1.0"
