"""Judge error in hallucination rates: the judge's agreement with human labels, and a rate corrected for it.

Weighting. A labelled pair carries `weight` = 1 / its inclusion probability in the review sample. Every figure is
read from the Horvitz–Thompson weighted 2x2 table (cell total = sum of the weights of its pairs), which estimates
the population's 2x2 up to one common factor. Targeted picks (judged hallucinations, disagreements) over-sample
some cells; their small weights undo that, so sensitivity and specificity stay unbiased (as ratios of weighted
totals: consistent, and unbiased to first order).

Why Rogan–Gladen and not prediction-powered inference (PPI). Human labels accrue slowly, over weeks, while a
monitor window is an hour or a day. PPI corrects the judge's mean by the rectifier mean(judge - human) on a uniform
sample of *the same population*; that rectifier is (1 - sp)(1 - p) - (1 - se)p, so it moves with the prevalence
p, and one measured last month is wrong in a window where p has spiked. Sensitivity and specificity are
conditional on the truth and do not depend on p, so labels pooled over a long period correct any window:
p = (raw + sp - 1) / (se + sp - 1).

When there is no corrected number. Rogan–Gladen divides by Youden's J = se + sp - 1, and a point estimate of J
above 0 does not make a judge informative: se 0.60 and sp 0.47 measured on a few dozen labels give J = 0.07 and a
"corrected" rate anywhere the noise puts it. So the judge is `judge_uninformative` unless the 95% interval of J
excludes 0. That interval is Newcombe's hybrid score interval for a sum of two independent proportions, built from
the Wilson intervals of se and sp that judge_agreement reports (on the Kish effective sizes): se and sp are shares
of disjoint groups of labelled pairs (human-labelled hallucinations, faithful answers), so they are independent,
and the J a reader is told to trust is the one the se and sp intervals beside it imply. It is preferred to the
bootstrap below, which redraws how many hallucinations were labelled and, with a few dozen, has resamples where J
is undefined; Newcombe's interval is analytic, keeps its coverage at small counts and needs no seed. A point outside
[0, 1] before clipping (the judge's rate above its measured sensitivity, or below its false-positive rate 1 - sp)
means the measured error does not explain the rate the judge counts: that is `judge_uninformative` too, with the
unclipped point and the interval of J in the struct and its detail, never a bound reported as ok.

The interval. A fixed-seed bootstrap: each resample redraws the labelled pairs for se and sp, and the judged count
as Binomial(n, raw) for the raw rate, then applies Rogan–Gladen; the 2.5/97.5 percentiles bound the rate. So the
interval carries both the raw rate's sampling error and the uncertainty of se and sp. It is preferred to the delta
method because se + sp - 1, a denominator estimated from a few dozen labelled hallucinations, makes the estimator
skewed; the percentiles keep the skew and the clipping to [0, 1] where a symmetric interval would not. A resample
in which the judge is uninformative (se + sp <= 1) or that drew no human-labelled hallucination (or no faithful
answer) leaves the rate anywhere in [0, 1]: it counts as 0 for the lower bound and as 1 for the upper one, which
widens the interval rather than hiding the case. Coverage of the nominal 95% is tested by simulation in
tests/test_correction.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ragpulse.config import defaults
from ragpulse.metrics.stats import bootstrap_means, percentile_intervals, wilson_interval
from ragpulse.model.agreement import CorrectedRate, CorrectionStatus, JudgeAgreement, LabelledPair, Rate

CELLS = ("human_hallucinated_judge_hallucinated", "human_hallucinated_judge_faithful",
         "human_faithful_judge_hallucinated", "human_faithful_judge_faithful")
"""The 2x2 cells, in the column order of every table here."""

AGREEMENT_METHOD = ("Horvitz-Thompson weighted 2x2 (weight = 1 / inclusion probability); sensitivity and "
                    "specificity: Wilson interval on the Kish effective sample size; kappa: percentile bootstrap, "
                    f"{defaults.BOOTSTRAP_RESAMPLES} resamples of the labelled pairs, seed {defaults.BOOTSTRAP_SEED}")
CORRECTION_METHOD = ("Rogan-Gladen (raw + sp - 1) / (se + sp - 1), se and sp from the Horvitz-Thompson weighted "
                     "labels; no number unless Newcombe's 95% interval of Youden's J = se + sp - 1 (from the Wilson "
                     "intervals of se and sp) excludes 0 and the point lies in [0, 1]; interval: percentile bootstrap, "
                     f"{defaults.BOOTSTRAP_RESAMPLES} resamples of the labelled pairs with the judged count drawn "
                     f"Binomial(n, raw), seed {defaults.BOOTSTRAP_SEED}")


def cell(pair: LabelledPair) -> int:
    """The column of `pair` in a 2x2 table (CELLS order)."""
    return 2 * (not pair.human) + (not pair.judge)


def cell_weights(pairs: Sequence[LabelledPair]) -> np.ndarray:
    """(pairs x 4): each pair's weight in its cell's column, 0 elsewhere; column sums are the weighted 2x2."""
    matrix = np.zeros((len(pairs), 4))
    matrix[np.arange(len(pairs)), [cell(p) for p in pairs]] = [p.weight for p in pairs]
    return matrix


def weighted_table(pairs: Sequence[LabelledPair]) -> np.ndarray:
    """The Horvitz–Thompson 2x2 [hh, hf, fh, ff] (human then judge; h = hallucinated): sums of weights per cell."""
    return cell_weights(pairs).sum(axis=0)


def sensitivity(tables: np.ndarray) -> np.ndarray:
    """se = hh / (hh + hf): the weighted share of human-labelled hallucinations the judge flags (nan without one).
    Works on one table (4,) or a stack (..., 4)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return tables[..., 0] / (tables[..., 0] + tables[..., 1])


def specificity(tables: np.ndarray) -> np.ndarray:
    """sp = ff / (fh + ff): the weighted share of human-labelled faithful answers the judge passes (nan without
    one)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return tables[..., 3] / (tables[..., 2] + tables[..., 3])


def kappa(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of weighted 2x2 tables: (p_o - p_e) / (1 - p_e), p_o = (hh + ff) / T and
    p_e = h j + (1 - h)(1 - j) from the human's and the judge's hallucinated shares h and j; 1 when p_e = 1 (both
    always give one label), as metrics.agreement.cohens_kappa."""
    total = tables.sum(axis=-1)
    observed = (tables[..., 0] + tables[..., 3]) / total
    human, judge = (tables[..., 0] + tables[..., 1]) / total, (tables[..., 0] + tables[..., 2]) / total
    expected = human * judge + (1 - human) * (1 - judge)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected >= 1.0, 1.0, (observed - expected) / (1 - expected))


def rogan_gladen_unclipped(raw: np.ndarray | float, se: np.ndarray | float, sp: np.ndarray | float) -> np.ndarray:
    """p = (raw - (1 - sp)) / (se - (1 - sp)), which leaves [0, 1] when raw is outside [1 - sp, se]; nan where
    se + sp <= 1 (or se, sp is nan). Written with the false-positive rate 1 - sp so that se = sp = 1 gives back raw
    exactly."""
    false_positive = 1 - np.asarray(sp, dtype=float)
    informative = np.asarray(se, dtype=float) - false_positive
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (raw - false_positive) / informative
    return np.where(informative > 0, value, np.nan)


def rogan_gladen(raw: np.ndarray | float, se: np.ndarray | float, sp: np.ndarray | float) -> np.ndarray:
    """rogan_gladen_unclipped clipped to [0, 1]: the bootstrap's resamples, where a true rate near 0 or 1 puts some
    points past the bound and the percentiles must still be rates."""
    return np.clip(rogan_gladen_unclipped(raw, se, sp), 0.0, 1.0)


def youden_interval(se: Rate, sp: Rate) -> tuple[float, float]:
    """Newcombe's hybrid score 95% interval of J = se + sp - 1 from the Wilson intervals of two independent shares:
    J - sqrt((se - se_low)^2 + (sp - sp_low)^2) to J + sqrt((se_high - se)^2 + (sp_high - sp)^2)."""
    j = se.value + sp.value - 1
    low = j - float(np.hypot(se.value - se.ci95[0], sp.value - sp.ci95[0]))
    high = j + float(np.hypot(se.ci95[1] - se.value, sp.ci95[1] - sp.value))
    return (low, high)


def resampled_tables(pairs: Sequence[LabelledPair], resamples: int = defaults.BOOTSTRAP_RESAMPLES,
                     seed: int = defaults.BOOTSTRAP_SEED) -> np.ndarray:
    """(resamples x 4) weighted 2x2 tables of a fixed-seed bootstrap that redraws all labelled pairs together.

    Not within the uniform and the targeted group apart: how many targeted picks a period yields is itself random,
    and the weighted table moves with it. In a simulation with targeted picks (tests/test_correction.py) the
    stratified bootstrap covered 89% of windows where this one covers about 94%."""
    return bootstrap_means(cell_weights(pairs), resamples, seed) * len(pairs)  # means of the cells * n = totals


def share(pairs: Sequence[LabelledPair], human: bool) -> Rate | None:
    """The weighted share of pairs the human called `human` on which the judge agrees (sensitivity for True,
    specificity for False), with a Wilson interval on the Kish effective size n_eff = (sum w)^2 / sum w^2, which
    is the plain count when the weights are equal; None when no pair has that human label."""
    group = [p for p in pairs if p.human == human]
    if not group:
        return None
    weights = np.array([p.weight for p in group])
    table = weighted_table(group)
    value = float(sensitivity(table) if human else specificity(table))
    effective = float(weights.sum() ** 2 / (weights ** 2).sum())
    return Rate(value=value, ci95=wilson_interval(value * effective, effective), n=len(group))


def judge_agreement(pairs: Sequence[LabelledPair]) -> JudgeAgreement:
    """Sensitivity, specificity and Cohen's kappa of the judge's hallucination call against the humans', each from
    the Horvitz–Thompson weighted 2x2 (module docstring), so targeted picks do not bias them; kappa's interval is a
    fixed-seed bootstrap of the labelled pairs."""
    table, uniform = weighted_table(pairs), sum(p.uniform for p in pairs)
    value = float(kappa(table)) if pairs else None
    interval = percentile_intervals(kappa(resampled_tables(pairs))[:, None])[0] if pairs else None
    counts = Counter(cell(p) for p in pairs)
    return JudgeAgreement(
        labels=len(pairs), estimation_labels=uniform, appearances=sum(p.appearances for p in pairs),
        sensitivity=share(pairs, True),
        specificity=share(pairs, False), kappa=value, kappa_ci95=interval,
        counts={name: counts[i] for i, name in enumerate(CELLS)}, method=AGREEMENT_METHOD,
        warning=agreement_warning(len(pairs), uniform, value))


def agreement_warning(labels: int, uniform: int, kappa_value: float | None) -> str | None:
    """Why the agreement figures should not be trusted yet, or None."""
    reasons = []
    if labels == 0:
        reasons.append("no labelled trace yet")
    elif uniform < defaults.MIN_ESTIMATION_LABELS:
        reasons.append(f"{uniform} labels in the estimation sample; {defaults.MIN_ESTIMATION_LABELS} are needed for "
                       "a corrected rate")
    if kappa_value is not None and kappa_value < defaults.KAPPA_RELIABLE:
        reasons.append(f"Cohen's kappa is below {defaults.KAPPA_RELIABLE}: the judge is unreliable on these traces; "
                       "read its rates through the corrected ones")
    return "; ".join(reasons) or None


def corrected_rate(positives: int, n: int, pairs: Sequence[LabelledPair]) -> CorrectedRate:
    """The judge flagged `positives` of `n` traces: that raw rate beside the Rogan–Gladen estimate of the true rate,
    p = (raw + sp - 1) / (se + sp - 1), se and sp from the weighted labelled pairs, and its bootstrap interval
    (module docstring). No number below MIN_ESTIMATION_LABELS uniform labels or without a human-labelled
    hallucination or faithful answer (`too_few_labels`), nor when the interval of Youden's J reaches 0 or the point
    falls outside [0, 1] (`judge_uninformative`)."""
    uniform = sum(p.uniform for p in pairs)
    if n == 0:
        return CorrectedRate(raw=None, raw_ci95=None, n=0, corrected=None, ci95=None, estimation_labels=uniform,
                             status="no_data", detail="no judged trace in this rate's population",
                             method=CORRECTION_METHOD)
    raw, se, sp = positives / n, share(pairs, True), share(pairs, False)
    youden = point = interval = None
    if se is not None and sp is not None:
        youden, interval = se.value + sp.value - 1, youden_interval(se, sp)
        point = float(rogan_gladen_unclipped(raw, se.value, sp.value)) if youden > 0 else None
    status, detail = correction_status(len(pairs), uniform, raw, se, sp, point)
    ok = status == "ok"
    return CorrectedRate(
        raw=raw, raw_ci95=wilson_interval(positives, n), n=n, corrected=point if ok else None,
        ci95=corrected_interval(positives, n, pairs) if ok else None,
        estimation_labels=uniform, status=status, detail=detail, method=CORRECTION_METHOD, unclipped=point,
        youden_j=youden, youden_j_ci95=interval)


def correction_status(labels: int, uniform: int, raw: float, se: Rate | None, sp: Rate | None,
                      point: float | None) -> tuple[CorrectionStatus, str]:
    """Whether the labels support a corrected rate, and the sentence that says what it rests on or why not;
    `point` is the unclipped Rogan–Gladen estimate (None when se + sp <= 1)."""
    if uniform < defaults.MIN_ESTIMATION_LABELS:
        return "too_few_labels", (f"{uniform} labels in the estimation sample; {defaults.MIN_ESTIMATION_LABELS} "
                                  "are needed for a corrected rate")
    if se is None or sp is None:
        missing = "hallucination" if se is None else "faithful answer"
        return "too_few_labels", f"no human-labelled {missing} yet: the judge's error cannot be measured"
    low, high = youden_interval(se, sp)
    youden = (f"Youden's J = sensitivity {se.value:.2f} + specificity {sp.value:.2f} - 1 = "
              f"{se.value + sp.value - 1:.2f}, 95% interval [{low:.2f}, {high:.2f}]")
    would_be = "" if point is None else f"; the corrected point would be {point:.3f}"
    if low <= 0:
        return "judge_uninformative", (f"{youden} reaches 0 on the labels: the judge's verdicts may say nothing "
                                       f"about the true rate{would_be}")
    if point is not None and not 0 <= point <= 1:
        bound = (f"above its measured sensitivity {se.value:.2f}" if point > 1
                 else f"below its measured false-positive rate {1 - sp.value:.2f}")
        return "judge_uninformative", (f"the corrected point {point:.3f} lies outside [0, 1]: the judge's rate "
                                       f"{raw:.3f} is {bound}, so its measured error does not explain what it "
                                       f"counts ({youden})")
    return "ok", (f"corrected for the judge's sensitivity {se.value:.2f} and specificity {sp.value:.2f}, measured "
                  f"on {labels} labels ({uniform} in the estimation sample)")


def corrected_interval(positives: int, n: int, pairs: Sequence[LabelledPair],
                       resamples: int = defaults.BOOTSTRAP_RESAMPLES,
                       seed: int = defaults.BOOTSTRAP_SEED) -> tuple[float, float]:
    """95% percentile interval of Rogan–Gladen over bootstrap resamples: the labelled pairs redrawn (resampled_tables)
    and the flagged count drawn Binomial(n, positives / n); a resample where the rate is undefined counts as 0 for
    the lower bound and 1 for the upper one."""
    tables_seed, count_seed = np.random.SeedSequence(seed).generate_state(2)
    tables = resampled_tables(pairs, resamples, int(tables_seed))
    raw = np.random.default_rng(count_seed).binomial(n, positives / n, size=resamples) / n
    values = rogan_gladen(raw, sensitivity(tables), specificity(tables))
    low = np.percentile(np.where(np.isnan(values), 0.0, values), 2.5)
    high = np.percentile(np.where(np.isnan(values), 1.0, values), 97.5)
    return (float(low), float(high))
