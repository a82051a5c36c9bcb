"""Metrics: pure per-query functions, their declarations (registry) and aggregation with intervals (stats)."""
