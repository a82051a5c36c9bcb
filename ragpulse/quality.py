"""Data-quality checks run when a batch is accepted: a warning, never a rejection."""

from __future__ import annotations

from collections.abc import Sequence

from ragpulse import defaults
from ragpulse.jobs import DataWarning
from ragpulse.schema import Trace


def data_quality_warnings(
    traces: Sequence[Trace], threshold: float = defaults.DATA_QUALITY_THRESHOLD
) -> list[DataWarning]:
    """Warn when more than `threshold` of the traces lack what a requested metric needs."""
    total = len(traces)
    unlabelled = sum(1 for t in traces if not t.has_labels)
    warnings = []
    if unlabelled / total > threshold:
        warnings.append(DataWarning(
            code="missing_gold_labels",
            message=f"{unlabelled} of {total} traces carry neither gold_doc_ids nor relevance; "
                    "retrieval metrics are computed only for labelled traces",
            count=unlabelled, total=total,
        ))
    return warnings
