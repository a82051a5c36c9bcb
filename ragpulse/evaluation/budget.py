"""Budgets during a run: a job's own budget and its tenant's daily budget."""

from __future__ import annotations


def budget_exhausted(job_spent: float, tenant_spent: float, job_budget: float | None,
                     tenant_daily_budget: float | None) -> str | None:
    """Which budget ran out, or None."""
    if job_budget is not None and job_spent >= job_budget:
        return f"job budget of ${job_budget:.4f} spent (${job_spent:.4f})"
    if tenant_daily_budget is not None and tenant_spent >= tenant_daily_budget:
        return f"tenant daily budget of ${tenant_daily_budget:.4f} spent (${tenant_spent:.4f})"
    return None
