"""Every Redis key ragpulse writes, in one place. All of them expire with the job (settings.result_ttl_seconds)."""

PREFIX = "ragpulse"


def job(job_id: str) -> str:
    """Hash: tenant, status, timestamps, progress counters, options and warnings of a job."""
    return f"{PREFIX}:job:{job_id}"


def job_chunk(job_id: str, chunk: int) -> str:
    """String: msgpack list of the traces of one chunk."""
    return f"{PREFIX}:job:{job_id}:chunk:{chunk}"


def job_results(job_id: str) -> str:
    """Hash: trace index -> msgpack TraceResult. Written idempotently, so a re-run chunk never double-counts."""
    return f"{PREFIX}:job:{job_id}:results"


def job_chunks_done(job_id: str) -> str:
    """Set: indexes of the chunks whose results are stored and counted."""
    return f"{PREFIX}:job:{job_id}:chunks_done"


def job_report(job_id: str) -> str:
    """String: JSON report, built once when the last chunk is done."""
    return f"{PREFIX}:job:{job_id}:report"



def job_calibration(job_id: str) -> str:
    """String: JSON calibration of the job's judge against human labels."""
    return f"{PREFIX}:job:{job_id}:calibration"
