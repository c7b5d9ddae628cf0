"""kubesched: the Kubernetes scheduler rebuilt in Python, faithful to kube-scheduler v1.37."""

from kubesched import compiled

__version__ = "0.1.0"

compiled.install()  # the hot path compiled by mypyc, unless its sources changed since (see compiled.py)
