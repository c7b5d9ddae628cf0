"""The embedded cluster, assembled in one place (as kube-scheduler-simulator's ``server/di``): the
store, its admission chain, the controller manager, the hollow kubelet and the scheduler, run on a
virtual clock (``cluster``)."""
