"""Lease-based leader election between scheduler replicas (client-go ``tools/leaderelection``)."""
