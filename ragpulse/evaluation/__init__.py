"""Evaluating: one trace (retrieval metrics, judge, generation scores) and one chunk of a job, under budgets."""
