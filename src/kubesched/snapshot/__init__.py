"""``kubesched snapshot``: a live cluster's state as the scheduler reads it (kube-scheduler's
informers), in one file of manifests every planning command reads. ``resources`` says what is
read, ``reader`` lists it page by page at one resourceVersion, ``normalize`` makes each object
one a create accepts (and, asked, anonymous), ``writer`` writes the file."""
