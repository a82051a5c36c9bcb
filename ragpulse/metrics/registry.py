"""The metric registry: one declaration per metric, which the report, the renderer and /metrics all loop over.

A declaration names the metric, says how to get its per-trace value, how it aggregates (`mean`: a macro-average with
a fixed-seed bootstrap interval; `proportion`: a share with a Wilson interval), which direction is better, its
starting target (shared/DOMAIN.md's typical thresholds; a starting point to calibrate, not a law) and, for
generation metrics, the Prometheus family it feeds, if any. Adding a metric is one declaration here plus its
function, and its name in ragpulse.model.metric_keys (the wire schema checks `targets` against it from below).

Retrieval metrics are computed from the ranking when a trace is evaluated and stored with the result (`at_k`
metrics once per requested k, keyed `name@k`). Generation metrics are read off a stored result, so a new one also
applies to results stored before it existed. A per-trace function returns None for a trace outside the metric's
population (no judge verdict, no claims, not unanswerable...), which keeps it out of n.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ragpulse.model.results import TraceResult
from ragpulse.metrics import retrieval as r
from ragpulse.metrics.generation import context_precision
from ragpulse.model.scores import GenerationScores
from ragpulse.metrics.stats import Aggregation
from ragpulse.model.prometheus import PER_APP, SCORE_BUCKETS, MetricDef

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class Ranking:
    """What a retrieval metric is computed from: the grade at each rank, the labels and the gain function."""

    grades: Sequence[int]
    n_relevant: int
    qrels: Mapping[str, int]
    gain: str


@dataclass(frozen=True)
class RetrievalMetric:
    """A retrieval metric; `at_k` ones are reported once per requested k as `name@k`."""

    name: str
    compute: Callable[[Ranking, int], float]
    at_k: bool
    aggregation: Aggregation
    description: str
    better: Better = "higher"
    target: float | None = None
    """For `at_k` metrics, the target at k = 5."""
    breakdown: bool = False
    """Shown in the per-question-type and per-source tables (at the diagnostic k)."""
    best: float = 1.0
    """The value of a perfect ranking; a trace short of it fails this metric."""
    scale: tuple[float, float] = (0.0, 1.0)
    """The bounds of a per-query value (every retrieval metric here is a 0-1 score)."""
    judged: bool = False
    """Needs a judge's verdict: no, a ranking and its labels are enough."""

    def key(self, k: int) -> str:
        """The result and report key of this metric at k (`recall@5`, or `mrr` for a whole-ranking metric)."""
        return f"{self.name}@{k}" if self.at_k else self.name

    def falls_short(self, value: float) -> bool:
        """True when `value` is worse than the metric's best value."""
        return value < self.best if self.better == "higher" else value > self.best


@dataclass(frozen=True)
class GenerationMetric:
    """A metric read off a trace's judged generation scores."""

    name: str
    per_trace: Callable[[TraceResult], float | None]
    aggregation: Aggregation
    description: str
    better: Better = "higher"
    target: float | None = None
    breakdown: bool = False
    """Reported per question type and per source, and shown in their tables."""
    column: str = ""
    """A short column header for tables (at most 13 characters); the name when empty."""
    scale: tuple[float, float] = (0.0, 1.0)
    """The metric's possible range, for charts."""
    prometheus: MetricDef | None = None
    """A histogram is observed with the per-trace value; a counter is incremented by it (0 or 1 for proportions).
    Its labels are drawn from `tenant`, `app` and `judge`; every quality family carries `tenant` and `app`."""
    population: MetricDef | None = None
    """A counter incremented by 1 for every trace in the metric's population (the report's n), so Prometheus
    divides the `prometheus` counter by the same n as the report and the rolling monitor."""
    judged: bool = True
    """Needs a judge's verdict, so two jobs compare on it only when the same judge, model and prompt version judged
    both, each judging enough of its traces (ragpulse.reporting.judging)."""


RETRIEVAL: tuple[RetrievalMetric, ...] = (
    RetrievalMetric("recall", lambda g, k: r.recall_at_k(g.grades, g.n_relevant, k), True, "mean",
                    "relevant documents in the top k / relevant documents", target=0.75, breakdown=True),
    RetrievalMetric("precision", lambda g, k: r.precision_at_k(g.grades, k), True, "mean",
                    "distinct relevant documents in the top k / k", target=0.60),
    RetrievalMetric("hit_rate", lambda g, k: r.hit_rate_at_k(g.grades, k), True, "proportion",
                    "share of queries with at least one relevant document in the top k"),
    RetrievalMetric("ndcg", lambda g, k: r.ndcg_at_k(g.grades, g.qrels, k, g.gain), True, "mean",
                    "DCG@k / ideal DCG@k over the graded labels"),
    RetrievalMetric("mrr", lambda g, _k: r.reciprocal_rank(g.grades), False, "mean",
                    "1 / rank of the first relevant document, 0 when none was retrieved", target=0.65,
                    breakdown=True),
    RetrievalMetric("map", lambda g, _k: r.average_precision(g.grades, g.n_relevant), False, "mean",
                    "mean of precision@i over ranks holding a relevant document / relevant documents"),
)


def retrieval_scores(
    ranked_ids: Iterable[str], qrels: Mapping[str, int], ks: Iterable[int], gain: str = "linear"
) -> dict[str, float] | None:
    """Every retrieval metric for one query, keyed `recall@5`, `ndcg@10`, `mrr`, `map`...

    Returns None when the labels hold no relevant document: such a query is unanswerable for retrieval and is
    kept out of the means.
    """
    n_relevant = r.relevant_count(qrels)
    if n_relevant == 0:
        return None
    ranking = Ranking(grades=r.graded_ranking(ranked_ids, qrels), n_relevant=n_relevant, qrels=qrels, gain=gain)
    scores = {m.key(k): m.compute(ranking, k) for k in ks for m in RETRIEVAL if m.at_k}
    scores.update({m.name: m.compute(ranking, 0) for m in RETRIEVAL if not m.at_k})
    return scores


def _generation(read: Callable[[GenerationScores], float | None]) -> Callable[[TraceResult], float | None]:
    """A per-trace function over the judged scores; traces without a verdict are outside every population."""
    return lambda result: None if result.generation is None else read(result.generation)


GENERATION: tuple[GenerationMetric, ...] = (
    GenerationMetric(
        "faithfulness", _generation(lambda g: g.faithfulness), "mean",
        "supported claims / claims, over judged traces that made claims", target=0.85, breakdown=True,
        prometheus=MetricDef("ragpulse_faithfulness", "histogram", "Faithfulness of judged traces that made claims.",
                             PER_APP, SCORE_BUCKETS)),
    GenerationMetric(
        "hallucination_rate", _generation(lambda g: float(g.hallucinated) if g.claims else None), "proportion",
        "share of judged traces that made claims with at least one unsupported or contradicted claim",
        better="lower", target=0.10, breakdown=True, column="hallucination",
        prometheus=MetricDef("ragpulse_traces_hallucinated", "counter",
                             "Judged traces with at least one unsupported or contradicted claim.",
                             (*PER_APP, "judge")),
        population=MetricDef("ragpulse_traces_answered", "counter",
                             "Judged traces that made claims: the hallucination rate's denominator (abstentions "
                             "and answers without claims are out).", (*PER_APP, "judge"))),
    GenerationMetric(
        "unanswerable_hallucination_rate",
        _generation(lambda g: float(bool(g.unanswerable_hallucination)) if g.unanswerable else None), "proportion",
        "among unanswerable traces (labelled, else judged), the share that did not abstain and asserted something "
        "unsupported", better="lower", target=0.15, breakdown=True, column="unans_halluc",
        prometheus=MetricDef("ragpulse_unanswerable_hallucinations", "counter",
                             "Unanswerable traces whose answer did not abstain and asserted something unsupported.",
                             (*PER_APP, "judge"))),
    GenerationMetric(
        "answer_relevance", _generation(lambda g: float(g.answer_relevance)), "mean",
        "how well the answer addresses the question, 1-3", target=2.5, breakdown=True,
        column="answer_rel", scale=(1.0, 3.0)),
    GenerationMetric(
        "context_relevance", _generation(lambda g: g.context_relevance), "mean",
        "judged usefulness of every retrieved document, 1-3, averaged over all retrieved positions", target=2.3,
        scale=(1.0, 3.0)),
    GenerationMetric(
        "context_precision",
        lambda result: context_precision(result.judgments[0].output) if result.generation and result.judgments
        else None, "mean",
        "rank-aware share of useful retrieved documents (judged relevance >= 2) ahead of useless ones; "
        "reference-free, from the judge's per-document relevance",
        prometheus=MetricDef("ragpulse_context_precision", "histogram",
                             "Context precision of judged traces (useful documents ranked first).",
                             PER_APP, SCORE_BUCKETS)),
    GenerationMetric(
        "correctness", _generation(lambda g: g.correctness), "mean",
        "share of the reference answer's key facts the answer covers, over traces with a reference answer"),
)

GENERATION_BY_NAME: dict[str, GenerationMetric] = {m.name: m for m in GENERATION}
RETRIEVAL_BY_NAME: dict[str, RetrievalMetric] = {m.name: m for m in RETRIEVAL}


def retrieval_metric(key: str) -> RetrievalMetric:
    """The retrieval metric behind a result or report key (`recall@5` -> recall, `mrr` -> mrr)."""
    return RETRIEVAL_BY_NAME[key.split("@", 1)[0]]


Metric = RetrievalMetric | GenerationMetric


def metric_for_key(key: str) -> Metric | None:
    """The metric behind a report key (`recall@5`, `mrr`, `hallucination_rate`), None for an unknown key (`mrr@5`,
    `recall` without a cutoff, a misspelling)."""
    name, at, _k = key.partition("@")
    if name in RETRIEVAL_BY_NAME:
        metric = RETRIEVAL_BY_NAME[name]
        return metric if bool(at) == metric.at_k else None
    return GENERATION_BY_NAME.get(name) if not at else None


def needs_judge(key: str) -> bool:
    """True when the metric behind `key` reads a judge's verdict (False for a retrieval or unknown key)."""
    metric = metric_for_key(key)
    return metric is not None and metric.judged


def metric_key_pattern() -> str:
    """A regular expression matching exactly the metric keys `metric_for_key` knows (for JSON schemas)."""
    at_k = "|".join(m.name for m in RETRIEVAL if m.at_k)
    whole = "|".join([m.name for m in RETRIEVAL if not m.at_k] + [m.name for m in GENERATION])
    return rf"^(?:(?:{at_k})@[0-9]{{1,4}}|{whole})$"


def default_target(key: str) -> float | None:
    """The documented starting target of a metric key (an `at_k` metric's target holds at k = 5 only)."""
    metric = metric_for_key(key)
    if metric is None or (isinstance(metric, RetrievalMetric) and metric.at_k and key != metric.key(5)):
        return None
    return metric.target


def prometheus_families() -> tuple[MetricDef, ...]:
    """The Prometheus families the registry declares (values and populations), for the metric catalog."""
    return tuple(family for m in GENERATION for family in (m.prometheus, m.population) if family is not None)
