"""PodTopologySpread: filtering (DoNotSchedule), scoring (ScheduleAnyway), default constraints."""

from kubesched.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread"]
