"""InterPodAffinity: required (Filter) and preferred (Score) pod affinity and anti-affinity."""

from kubesched.scheduler.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity"]
