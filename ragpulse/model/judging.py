"""Who judged a job's traces, and how many of those sent to the judge came back judged: what compare, gate and the
job page's default baseline check before reading judged metrics of two jobs side by side."""

from __future__ import annotations

from typing import Literal

import msgspec


class Judging(msgspec.Struct, kw_only=True):
    """The judge, model and prompt version behind a job's judged metrics (those of most of its judged traces), and
    its judged share: `judged` of the `sent` traces that went to the judge (judged, judge_error, skipped by a budget,
    or failed while a judge was set) came back with a judgment. Traces the sampling policy left out, or without an
    answer, were never sent and count in neither."""

    judge: str | None
    """The judge's name (`anthropic`, `openai`, or the offline heuristic); None when no trace went to a judge."""
    model: str | None
    prompt_version: str | None
    heuristic: bool = False
    """An offline heuristic rather than an LLM (ragpulse.judges.kinds.is_heuristic)."""
    judged: int
    sent: int

    @property
    def share(self) -> float | None:
        """judged / sent; None when nothing was sent."""
        return self.judged / self.sent if self.sent else None

    def describe(self) -> str:
        """`judge anthropic, model claude-x, prompt v3` (or `no judge`)."""
        if self.judge is None:
            return "no judge"
        kind = " (heuristic)" if self.heuristic else ""
        return f"judge {self.judge}{kind}, model {self.model or '-'}, prompt {self.prompt_version or '-'}"


QualificationVerdict = Literal["qualified", "not_qualified", "not_run"]


class QualificationNote(msgspec.Struct, kw_only=True):
    """How far a judge's rates can be trusted before the deployment's own labels: its latest qualification on the
    suite shipped with ragpulse (the prior; agreement on the app's labels is the posterior), as every rate shows it."""

    judge: str
    model: str | None
    prompt_version: str | None
    verdict: QualificationVerdict
    """`not_run` when this judge configuration was never qualified here: its rates are as good as unmeasured."""
    kappa: tuple[float, tuple[float, float]] | None = None
    """Cohen's kappa on the suite and its 95% interval."""
    finished_at: str | None = None
    """When the qualification ran (ISO 8601)."""
    summary: str
    """The line shown beside the rate: `qualified on the shipped suite: kappa 0.71 [0.63, 0.78], 2026-12-08`."""
