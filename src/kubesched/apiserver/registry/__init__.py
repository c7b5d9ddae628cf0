"""The registry's strategies (``pkg/registry``): what every write goes through beside admission
(defaulting, the kind's validation, what an update may change), Services' allocators, the pod
subresources' own strategies (resize, ephemeral containers), custom resources in and out."""
