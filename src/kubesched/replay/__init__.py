"""Trace replay on the virtual clock: workloads, the GPU-sharing model, measures, sweeps and reports."""
