"""Searching the generalization lattice for the least-lossy transformation that meets the privacy targets."""
