"""Preemption (``pkg/scheduler/framework/preemption``): find nodes where evicting lower-priority
pods makes room, choose one, and act on it."""
