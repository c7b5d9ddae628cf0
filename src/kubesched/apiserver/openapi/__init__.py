"""The OpenAPI documents kube-apiserver serves at ``/openapi/v2`` and ``/openapi/v3``: upstream's own,
recorded from kube-apiserver v1.37.2 (``recorded.py``), less what this server does not serve
(``prune.py``), with each CRD's paths and schemas as apiextensions-apiserver's OpenAPI builder
makes them (``custom.py``)."""
