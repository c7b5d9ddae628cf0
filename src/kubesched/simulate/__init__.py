"""Simulations: replay a cluster through the scheduler on a virtual clock."""
