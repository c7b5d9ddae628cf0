"""The scheduling framework: extension points, CycleState, Status, registry and runtime."""
