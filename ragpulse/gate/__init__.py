"""`ragpulse gate`: evaluate a trace file, hold its report to floors and ceilings, and (with a baseline) fail on a
significant regression. Config in `config`, verdicts in `checks`, the printed table, JUnit XML and GitHub annotations
in `output`; the command itself is ragpulse.ops.gate, beside `ragpulse eval`."""
