"""Loading a cluster's state from manifests, the one way ``simulate``, the API server's PATHS,
planning and replay read them: decoding and validation as kube-apiserver's create would
(``validate_manifest``), the scheduler's configuration picked out (``split_config``)."""
