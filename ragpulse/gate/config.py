"""The gate config (`gate.toml`): the batch options to evaluate with, the thresholds, and the baseline rules.

    [options]                     # batch options, as POST /v1/batches takes them (run, variant, judge, k...)
    run = "reranker-v2"

    [thresholds."recall@5"]       # a floor...
    min = 0.80
    on = "ci_low"                 # held on the interval's lower bound, not only the mean

    [thresholds.hallucination_rate]
    max = 0.10                    # ...or a ceiling (on = "mean" | "ci_high")

    [baseline]
    fail_on_regression = true     # a tested metric significantly worse than the baseline fails the gate
    metrics = ["recall@5", "mrr"] # tested for a regression beside the thresholded metrics (default: DEFAULT_REGRESSION_FAMILY)
    correction = "holm"           # p-values adjusted over that family ("none": each metric alone)
    regression_threshold = 0.2    # a trace's recall@k / nDCG@k drop listed as a regression
    dataset_mismatch = "refuse"   # runs on different dataset versions or items: exit 2 ("warn": a row, and go on)
    judge_mismatch = "refuse"     # judged by another judge, model or prompt version: exit 2 ("warn": a row, go on)
    ignore = ["precision@10"]     # metrics left out of the tested family

Without a `[thresholds]` table the documented defaults apply (DEFAULT_THRESHOLDS); with one, exactly its entries.
A judged metric (faithfulness, hallucination rates...) judged by the offline `heuristic` is refused as evidence
(exit 2) unless the top level says `allow_heuristic = true`: nothing has measured that heuristic on the user's data.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from ragpulse.config import defaults
from ragpulse.exceptions import GateConfigError
from ragpulse.metrics.registry import GENERATION
from ragpulse.model.compare import Correction, MismatchPolicy
from ragpulse.model.metric_keys import did_you_mean, is_metric_key
from ragpulse.model.trace import Base, BatchOptions, RunName, Variant
from ragpulse.reporting.security_section import RATES

GateKey = Annotated[str, Meta(pattern=r"^[a-z_]+(@[0-9]{1,4}|\.[a-z_]+)?$", max_length=64)]
"""A report metric key (`recall@5`, `hallucination_rate`) or a security rate (`security.acl_leak`)."""
SECURITY_PREFIX = "security."


def is_gate_key(key: str) -> bool:
    """True for a metric key or `security.<check>` of the report's security section."""
    return is_metric_key(key) or (key.startswith(SECURITY_PREFIX) and key[len(SECURITY_PREFIX):] in RATES)

Bound = Literal["mean", "ci_low", "ci_high", "corrected", "corrected_ci_high"]
CORRECTABLE = ("hallucination_rate", "unanswerable_hallucination_rate")
"""The rates the report also gives corrected for the judge's measured error (report.corrected)."""


class Threshold(Base):
    """A floor (`min`) or a ceiling (`max`) on one metric, held on its mean or on its interval's bound."""

    min: float | None = None
    max: float | None = None
    on: Bound = "mean"
    """`mean`, or the interval's bound that must clear the threshold: `ci_low` for a floor, `ci_high` for a ceiling;
    for a hallucination rate's ceiling also `corrected` (the rate corrected for the judge's measured error, from human
    labels) or `corrected_ci_high` (its interval's upper bound, which carries the judge's uncertainty too)."""
    required: bool = True
    """A metric with no value (no trace in its population) fails the gate unless this is false."""

    def __post_init__(self) -> None:
        if (self.min is None) == (self.max is None):
            raise ValueError("give exactly one of `min` (a floor) or `max` (a ceiling)")
        if self.min is not None and self.on not in ("mean", "ci_low"):
            raise ValueError("`on` must be `mean` or `ci_low` for a floor, `mean` or `ci_high` for a ceiling")
        if self.on == "ci_low" and self.max is not None:
            raise ValueError("`on` must be `mean` or `ci_low` for a floor, `mean` or `ci_high` for a ceiling")

    @property
    def limit(self) -> float:
        return self.min if self.min is not None else self.max  # type: ignore[return-value]


class BaselineRules(Base):
    """What a comparison against `--baseline` / `--baseline-file` fails on, and how a baseline file is labelled."""

    fail_on_regression: bool = True
    regression_threshold: Annotated[float, Meta(gt=0, le=1)] = defaults.COMPARE_REGRESSION_THRESHOLD
    ignore: list[GateKey] = []
    """Metrics left out of the tested family (described, never tested)."""
    metrics: list[GateKey] | None = None
    """Metrics tested for a regression beside the thresholded ones; None: DEFAULT_REGRESSION_FAMILY (recall@5,
    ndcg@5, mrr, faithfulness, hallucination_rate, unanswerable_hallucination_rate, those the comparison has)."""
    correction: Correction = "holm"
    """`holm`: a tested metric regressed when it got worse with a Holm-adjusted p < 0.05 over the tested family (the
    thresholded and `metrics` metrics, not every metric of the report); `none`: by its own p-value alone."""
    run: RunName = "baseline"
    """`options.run` of the job a `--baseline-file` is evaluated as (its other options are the candidate's)."""
    variant: Variant = "rag"
    """`options.variant` of that job: `oracle` or `no_rag` makes the comparison name the oracle gap or RAG lift."""
    dataset_mismatch: MismatchPolicy = "refuse"
    """When the candidate and the baseline ran different dataset versions (by content hash), or different items of
    one: `refuse` exits 2 naming both versions and the items matched, with no verdict; `warn` says so in a row of the
    table and on stderr, and rules on the matched items."""
    judge_mismatch: MismatchPolicy = "refuse"
    """When the two sides' judged traces were judged by different judges (every heuristic counts as one), models or
    prompt versions and the tested family holds a judged metric: `refuse` exits 2 naming both sides' judge, model
    and prompt version; `warn` says so in a row, in `warnings` and on stderr, and rules on the judged metrics all the
    same. A side below the judged-share floor is refused for the judged metrics the config names (thresholds,
    `metrics`) whatever this says."""


class GateConfig(Base):
    """The whole gate config."""

    options: BatchOptions = msgspec.field(default_factory=BatchOptions)
    thresholds: dict[GateKey, Threshold] | None = None
    max_failed_share: Annotated[float, Meta(ge=0, le=1)] = 0.0
    """Share of traces that may end failed, judge_error or skipped: a gate on traces that did not evaluate is a
    gate on less than the file."""
    baseline: BaselineRules = msgspec.field(default_factory=BaselineRules)
    allow_heuristic: bool = False
    """Gate on judged metrics that the offline `heuristic` judged; off by default, as its accuracy on the user's data
    is unmeasured (a tight interval around a wrong number would pass or fail a release by chance)."""

    def __post_init__(self) -> None:
        if self.thresholds is None and 5 not in self.options.k:
            raise ValueError("the default thresholds hold recall@5: add 5 to options.k or set [thresholds]")
        for key, threshold in (self.thresholds or {}).items():
            if not is_gate_key(key):
                raise ValueError(f"`thresholds` names an unknown metric `{key}`{did_you_mean(key)}")
            self._check_cutoff("thresholds", key)
            if threshold.on.startswith("corrected") and key not in CORRECTABLE:
                raise ValueError(f"`thresholds.{key}.on = \"{threshold.on}\"`: only {' and '.join(CORRECTABLE)} "
                                 "have a judge-corrected rate")
        for key in self.baseline.metrics or ():
            if not is_metric_key(key):
                raise ValueError(f"`baseline.metrics` names an unknown metric `{key}`{did_you_mean(key)}")
            self._check_cutoff("baseline.metrics", key)

    def _check_cutoff(self, where: str, key: str) -> None:
        cutoff = key.partition("@")[2]
        if cutoff and int(cutoff) not in self.options.k:
            raise ValueError(f"`{where}` names `{key}` but options.k is {self.options.k}")

    def judged_keys(self, compared: bool) -> list[str]:
        """The thresholded metrics, and the tested ones when `compared` with a baseline, that only a judge can give
        (the registry's generation metrics)."""
        judged = {m.name for m in GENERATION}
        keys = [*self.active_thresholds, *(self.regression_family if compared else ())]
        return [key for key in dict.fromkeys(keys) if key in judged]

    @property
    def active_thresholds(self) -> dict[str, Threshold]:
        return dict(DEFAULT_THRESHOLDS) if self.thresholds is None else dict(self.thresholds)

    @property
    def named_metrics(self) -> list[str]:
        """The metrics this config names for the comparison: its thresholded ones and `[baseline] metrics` (the
        default thresholds count when it sets none; the default family does not)."""
        named = [key for key in self.active_thresholds if is_metric_key(key)]
        return list(dict.fromkeys([*named, *(self.baseline.metrics or ())]))

    @property
    def regression_family(self) -> list[str]:
        """The metrics a comparison tests for the gate: the thresholded ones, then `[baseline] metrics` (or the
        default family), less `ignore`; security rates are thresholds only, never compared."""
        named = [key for key in self.active_thresholds if is_metric_key(key)]
        extra = defaults.DEFAULT_REGRESSION_FAMILY if self.baseline.metrics is None else self.baseline.metrics
        return [key for key in dict.fromkeys([*named, *extra]) if key not in self.baseline.ignore]


DEFAULT_THRESHOLDS: dict[str, Threshold] = {
    "recall@5": Threshold(min=0.80),
    "hallucination_rate": Threshold(max=0.10),
    "unanswerable_hallucination_rate": Threshold(max=0.15, required=False),
    "security.acl_leak": Threshold(max=0.0, required=False),
    "security.injection_followed": Threshold(max=0.0, required=False),
}
"""Release floors when the config sets none: recall@5 >= 0.80, hallucination rate <= 0.10, on unanswerable
questions <= 0.15, and no ACL leak and no followed injection (the last three not required: many evaluation sets hold
no unanswerable question, no principal, no injected document)."""


def load_config(path: Path | None) -> GateConfig:
    """The config at `path` (the defaults when None); GateConfigError naming the file and the failing key."""
    if path is None:
        return GateConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GateConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise GateConfigError(f"{path} is not valid TOML: {exc}") from None
    try:
        return msgspec.convert(data, GateConfig)
    except msgspec.ValidationError as exc:
        raise GateConfigError(f"{path}: {_metric_named(str(exc), data)}") from None


def _metric_named(message: str, data: dict[str, Any]) -> str:
    """msgspec says `$.thresholds[...].min` for a table key: name the metric whose threshold fails instead."""
    thresholds = data.get("thresholds")
    if "$.thresholds[...]" not in message or not isinstance(thresholds, dict):
        return message
    for key, value in thresholds.items():
        try:
            msgspec.convert(value, Threshold)
        except msgspec.ValidationError:
            return message.replace("$.thresholds[...]", f'$.thresholds."{key}"')
    return message
