"""Judge every suite item with bounded concurrency and measure the judge against the labels.

The judge is built through the judge catalog (ragpulse.judges.kinds) from its name and the settings, and judges each
item exactly as a job's traces are judged: cut to the judge-input limits, its verdicts quote-checked, the answer
hallucinated when any claim is not supported (ragpulse.metrics.generation.hallucinated). A judge error on an item
is recorded as that item's error and counted apart, never read as a verdict; a credentials error ends the run.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Sequence

from ragpulse.config.settings import Settings
from ragpulse.evaluation.trace import judge_checked
from ragpulse.exceptions import JudgeAuthError, JudgeError, JudgeNotConfigured
from ragpulse.judges import kinds
from ragpulse.judges.judge_input import JudgeInputLimits, for_judging
from ragpulse.metrics.generation import hallucinated
from ragpulse.model.verdicts import Judge, JudgeObserver
from ragpulse.qualification.agreement import Outcome, figures
from ragpulse.qualification.model import Miss, Qualification, SplitChoice, SuiteItem
from ragpulse.qualification.suite import suite_version
from ragpulse.qualification.verdict import decide

Progress = Callable[[int, int], None]
"""Called with (items done, items in all) after each item."""


async def judge_item(judge: Judge, item: SuiteItem, limits: JudgeInputLimits) -> tuple[bool | None, str | None]:
    """(whether the judge called the answer hallucinated, None) or (None, the error) when judging it failed."""
    trace, _ = for_judging(item.trace, limits)
    try:
        judgment = await judge_checked(judge, trace)
    except (JudgeAuthError, JudgeNotConfigured):
        raise
    except JudgeError as exc:
        return None, exc.reason
    return hallucinated(judgment.output), None


async def qualify(name: str, settings: Settings, items: Sequence[SuiteItem], split: SplitChoice,
                  observer: JudgeObserver | None = None, progress: Progress | None = None) -> Qualification:
    """Judge `items` with the judge `name` (at most settings.judge_concurrency at once) and measure it.

    ValueError when `name` judges nothing (`none`); JudgeAuthError or JudgeNotConfigured when it cannot judge here."""
    judge = kinds.make_judge(name, settings, observer)
    if judge is None:
        raise ValueError(f"judge {name} judges nothing; name a judge that does ({', '.join(kinds.judging_names())})")
    started = datetime.datetime.now(datetime.UTC)
    bound, done = asyncio.Semaphore(settings.judge_concurrency), 0
    limits = JudgeInputLimits.from_settings(settings)

    async def one(item: SuiteItem) -> tuple[bool | None, str | None]:
        nonlocal done
        async with bound:
            result = await judge_item(judge, item, limits)
        done += 1
        if progress is not None:
            progress(done, len(items))
        return result

    try:
        calls = await asyncio.gather(*(one(item) for item in items))
    finally:
        await judge.aclose()
    return measure(name, kinds.model_for(name, settings) or judge.model, items, calls, split, started)


def measure(name: str, model: str, items: Sequence[SuiteItem], calls: Sequence[tuple[bool | None, str | None]],
            split: SplitChoice, started: datetime.datetime) -> Qualification:
    """The result of a run from each item's call: figures overall, per split and per class, the verdict, the misses."""
    outcomes = [Outcome(item.hallucinated, judged) for item, (judged, _) in zip(items, calls, strict=True)]

    def group(key: Callable[[SuiteItem], str]) -> dict[str, list[Outcome]]:
        groups: dict[str, list[Outcome]] = {}
        for item, outcome in zip(items, outcomes):
            groups.setdefault(key(item), []).append(outcome)
        return groups

    overall = figures(outcomes)
    verdict, reasons = decide(overall)
    misses = [Miss(id=item.id, failure_class=item.failure_class, split=item.split, label=item.hallucinated,
                   judged=judged, error=error)
              for item, (judged, error) in zip(items, calls) if judged != item.hallucinated]
    return Qualification(
        judge=name, model=model, prompt_version=kinds.current_prompt_versions().get(name, ""),
        suite_version=suite_version(), split=split, started_at=started,
        finished_at=datetime.datetime.now(datetime.UTC), overall=overall,
        by_split={k: figures(v) for k, v in sorted(group(lambda i: i.split).items())},
        by_class={k: figures(v) for k, v in group(lambda i: i.failure_class).items()},
        verdict=verdict, reasons=reasons, misses=misses, heuristic=kinds.is_heuristic(name))
