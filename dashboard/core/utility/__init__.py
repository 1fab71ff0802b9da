"""Measuring what a transformation costs: information-loss metrics, value distributions and classifier accuracy."""
