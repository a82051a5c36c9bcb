"""Metric functions: pure, per query; aggregation lives in ragpulse.metrics.stats and ragpulse.report."""
