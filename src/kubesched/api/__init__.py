"""Kubernetes objects as the scheduler reads them: quantities, resources, selectors, pods."""
