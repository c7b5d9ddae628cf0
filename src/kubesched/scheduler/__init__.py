"""The scheduler: queue, cache, framework, plugins and the scheduling/binding cycles."""
