"""Reports: the typed report of a job, how it is built from per-trace results, and how it is rendered."""
