"""Answers for capacity planners, from replays through the scheduler on the virtual clock:
``size`` (how many nodes of a template leave no pod pending)."""
