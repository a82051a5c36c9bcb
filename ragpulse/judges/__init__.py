"""Judges: one structured verdict per trace, from which every generation metric is computed."""
