"""The exit codes of `ragpulse eval` and of the job commands (`wait`, `report`, `compare`) that share them."""

EXIT_OK = 0
"""`ragpulse eval`: every trace was evaluated and the report printed."""
EXIT_FAILED = 1
"""A job failed, the service could not be reached, or it answered another error (such as 401 for a wrong key, or
a 429 or 5xx still there after the retries), or a body that is not its API's JSON (a proxy's page)."""
EXIT_USAGE = 2
"""Bad arguments (argparse's own code), a setting out of range (RAGPULSE_PORT), options the service refuses (a judge
it has no credentials for), a trace file that cannot be read, is not valid JSON/JSONL, or holds no traces, or an
--html file that cannot be written (checked before anything is posted; should the write fail all the same, after the
report was printed, 2 too, never 1)."""
EXIT_TRACES_FAILED = 3
"""The report was printed, but some traces failed (it lists them under FAILED TRACES)."""
EXIT_REJECTED = 4
"""The service rejected the traces: schema violations (each named with its trace and line), or a batch over its
limits. Nothing was evaluated."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, as shells report it): the jobs created so far run on; the message says how to follow them."""
