"""Taking batches in: decoding bodies with field-path errors, data-quality warnings, cost estimates (dry run)."""
