"""API Priority and Fairness's configuration in the API server (``apiserver/pkg/util/flowcontrol``
and ``pkg/registry/flowcontrol``): the bootstrap objects ensured (``ensurer.py``), and requests
classified by the FlowSchemas into priority levels and flows (``classify.py``), whose seats and
queues ``apiserver/filters/fairness.py`` hands out."""
