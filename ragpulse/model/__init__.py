"""What ragpulse reads and writes: traces, judge verdicts, per-trace results and job views, reports, calibrations."""
