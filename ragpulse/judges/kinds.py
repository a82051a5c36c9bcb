"""Every judge a batch may name, declared once with its capabilities and how to build it.

Callers dispatch on capabilities (`is_billable(name)`), never on a judge's name, and list judges by iterating
`JUDGES`. The factories import their judge (the Anthropic and OpenAI SDKs, the local judge's lexicons) only when
they run, so settings and the CLI read this catalog without loading any.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragpulse.config.defaults import JUDGE_ALIASES
from ragpulse.exceptions import JudgeError

if TYPE_CHECKING:
    from ragpulse.model.trace import Trace
    from ragpulse.model.verdicts import Judge, JudgeCall, JudgeObserver, Judgment
    from ragpulse.judges.ratelimit import JudgeLimiter
    from ragpulse.config.settings import Settings
    from ragpulse.judges.structured import StructuredJudge
    from ragpulse.judges.task import ToolTask
    from ragpulse.judges.batches import BatchApi

JudgeFactory = Callable[["Settings", "JudgeObserver | None"], "Judge"]
"""Builds a judge from settings, inside the event loop that will use it."""
TaskFactory = Callable[["Settings", "ToolTask", "JudgeObserver | None"], "StructuredJudge"]
"""Builds an LLM client for another structured task (its tool, prompt and version) on the judge's provider, model,
rate limiter and retries, inside the event loop that will use it."""


@dataclass(frozen=True, kw_only=True)
class JudgeKind:
    """One judge a batch, RAGPULSE_JUDGE or the CLI may name, with what it can do."""

    name: str
    """The name on the wire (schema.JudgeName), in settings, on the CLI and in Prometheus `judge` labels."""

    billable: bool
    """Its calls cost money: budgets apply and a dry run prices its tokens."""

    remote: bool
    """Traces leave the machine for a provider's API."""

    offline: bool
    """Needs neither a network nor credentials."""

    heuristic: bool
    """Not an LLM: reports flag its figures as a heuristic's, and it cannot be biased towards its own output."""

    prompt_cache: bool = False
    """Marks its fixed prefix for the provider's prompt cache, billed apart (writes 1.25x, reads 0.1x the input
    price): a dry run prices the prefix so when it reaches the model's minimum cacheable length."""

    factory: JudgeFactory | None
    """Builds the judge; None for `none`, which judges nothing."""

    tasks: TaskFactory | None = None
    """Builds an LLM client for other structured tasks (synthetic dataset generation, pairwise A/B comparison of two
    answers); None for judges that are not LLMs (the local heuristic, which cannot write or compare answers and must
    not pretend to)."""

    model: Callable[[Settings], str | None] = lambda settings: None
    """The model it judges with under these settings (what a dry run prices and self-evaluation compares)."""

    prompt_version: Callable[[], str] | None = None
    """The prompt version its judgments carry now (imported only when asked); None for `none`."""

    missing: Callable[[Settings], tuple[str, ...]] = lambda settings: ()
    """The service settings still to set before it can judge here (its credentials or server); () when none."""

    batch_api: Callable[[Settings], BatchApi] | None = None
    """Builds the client of its provider's batch API (`options.delivery` batch); None when it has none: an LLM judge
    without one refuses batch delivery, a judge that makes no provider calls ignores it."""

    batch_offered: Callable[[Settings], str | None] = lambda settings: None
    """Why its configured server has no batch API under these settings (what to set), or None when it has."""


def _anthropic(settings: Settings, observer: JudgeObserver | None) -> Judge:
    from ragpulse.judges.anthropic_judge import AnthropicJudge, RetryPolicy  # noqa: PLC0415

    return AnthropicJudge(_anthropic_client(settings), settings.judge_model, settings.judge_max_tokens,
                          settings.judge_temperature, limiter=_limiter(settings, settings.judge_model),
                          retry=RetryPolicy(max_retries=settings.judge_max_retries), observer=observer)


def _anthropic_client(settings: Settings):  # noqa: ANN202 - anthropic is imported lazily
    import anthropic  # noqa: PLC0415 - loaded only where a judge is built (see the module docstring)

    # api_key and base_url fall back to the SDK's own ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL. The SDK's own
    # retries are off: the judge retries itself so that a 429 can pause every worker through Redis.
    return anthropic.AsyncAnthropic(base_url=settings.judge_base_url, timeout=settings.judge_timeout_seconds,
                                    max_retries=0)


def _anthropic_tasks(settings: Settings, task: ToolTask, observer: JudgeObserver | None) -> StructuredJudge:
    from ragpulse.judges.anthropic_judge import AnthropicProvider  # noqa: PLC0415
    from ragpulse.judges.structured import RetryPolicy, StructuredJudge  # noqa: PLC0415

    model = settings.judge_model
    provider = AnthropicProvider(_anthropic_client(settings), model, settings.judge_max_tokens,
                                 settings.judge_temperature, task)
    return StructuredJudge(provider, model, settings.judge_max_tokens, limiter=_limiter(settings, model),
                           retry=RetryPolicy(max_retries=settings.judge_max_retries), observer=observer)


def _openai_tasks(settings: Settings, task: ToolTask, observer: JudgeObserver | None) -> StructuredJudge:
    import openai  # noqa: PLC0415 - loaded only where a judge is built (see the module docstring)

    from ragpulse.config.defaults import OPENAI_PLACEHOLDER_API_KEY  # noqa: PLC0415
    from ragpulse.judges.openai_judge import OpenAIProvider  # noqa: PLC0415
    from ragpulse.judges.structured import RetryPolicy, StructuredJudge  # noqa: PLC0415

    model = settings.openai_model or ""
    client = openai.AsyncOpenAI(api_key=settings.openai_api_key or OPENAI_PLACEHOLDER_API_KEY,
                                base_url=settings.openai_base_url, timeout=settings.judge_timeout_seconds,
                                max_retries=0)
    provider = OpenAIProvider(client, model, settings.judge_max_tokens, settings.judge_temperature,
                              settings.openai_structured, task)  # type: ignore[arg-type]  # checked by Settings
    return StructuredJudge(provider, model, settings.judge_max_tokens, limiter=_limiter(settings, model),
                           retry=RetryPolicy(max_retries=settings.judge_max_retries), observer=observer)


def _anthropic_batches(settings: Settings) -> BatchApi:
    import anthropic  # noqa: PLC0415 - loaded only where a judge is built (see the module docstring)

    from ragpulse.judges.anthropic_batches import AnthropicBatches  # noqa: PLC0415

    # Polls are rare and cheap to repeat: the SDK's own retries ride out a transient error.
    return AnthropicBatches(anthropic.AsyncAnthropic(base_url=settings.judge_base_url,
                                                     timeout=settings.judge_timeout_seconds, max_retries=2))


def _openai_batches(settings: Settings) -> BatchApi:
    import openai  # noqa: PLC0415 - loaded only where a judge is built (see the module docstring)

    from ragpulse.config.defaults import OPENAI_PLACEHOLDER_API_KEY  # noqa: PLC0415
    from ragpulse.judges.openai_batches import OpenAIBatches  # noqa: PLC0415

    return OpenAIBatches(openai.AsyncOpenAI(api_key=settings.openai_api_key or OPENAI_PLACEHOLDER_API_KEY,
                                            base_url=settings.openai_base_url,
                                            timeout=settings.judge_timeout_seconds, max_retries=2))


def _openai(settings: Settings, observer: JudgeObserver | None) -> Judge:
    from ragpulse.judges.structured import RetryPolicy, UnconfiguredJudge  # noqa: PLC0415

    model = settings.openai_model
    if settings.openai_base_url is None or model is None:
        return UnconfiguredJudge("openai", model or "", "judge not configured: set RAGPULSE_OPENAI_BASE_URL and "
                                 "RAGPULSE_OPENAI_MODEL")
    import openai  # noqa: PLC0415 - loaded only where a judge is built (see the module docstring)

    from ragpulse.config.defaults import OPENAI_PLACEHOLDER_API_KEY  # noqa: PLC0415
    from ragpulse.judges.openai_judge import OpenAIJudge  # noqa: PLC0415

    # The SDK's own retries are off, as for anthropic; its OPENAI_API_KEY is never used (an explicit key is given).
    client = openai.AsyncOpenAI(api_key=settings.openai_api_key or OPENAI_PLACEHOLDER_API_KEY,
                                base_url=settings.openai_base_url, timeout=settings.judge_timeout_seconds,
                                max_retries=0)
    return OpenAIJudge(client, model, settings.judge_max_tokens, settings.judge_temperature,
                       structured=settings.openai_structured,  # type: ignore[arg-type]  # checked by Settings
                       limiter=_limiter(settings, model), retry=RetryPolicy(max_retries=settings.judge_max_retries),
                       observer=observer)


def _limiter(settings: Settings, model: str) -> JudgeLimiter:
    from ragpulse.judges.ratelimit import JudgeLimiter, Limits  # noqa: PLC0415
    from ragpulse.store.connection import worker_async_client  # noqa: PLC0415

    limits = Limits(requests=settings.judge_rpm, input_tokens=settings.judge_itpm,
                    output_tokens=settings.judge_otpm, window_seconds=settings.judge_rate_window_seconds)
    # The pacer's client rides out a Redis restart like the worker's own (retries with backoff for about a minute).
    return JudgeLimiter(settings.redis_url, worker_async_client(settings.redis_url, settings.judge_concurrency,
                                                           settings.worker_redis_outage_seconds),
                        model, limits)


def _local(settings: Settings, observer: JudgeObserver | None) -> Judge:
    from ragpulse.judges.local import LocalJudge  # noqa: PLC0415

    judge = LocalJudge()
    return judge if observer is None else ReportingJudge(judge, observer)


class ReportingJudge:
    """A judge that does not report its own calls to the observer (the offline `heuristic` judge), wrapped so that it
    does: each call of a judgment, or of a failure, counts as one ok request. A job's spend and the judge request
    metrics then count every call of every judge; the local judge's cost 0 (its model has no price)."""

    def __init__(self, judge: Judge, observer: JudgeObserver) -> None:
        self.judge, self.observer = judge, observer
        self.name, self.model = judge.name, judge.model

    async def ajudge(self, trace: Trace) -> Judgment:
        """Judge through the wrapped judge, then report its calls."""
        try:
            judgment = await self.judge.ajudge(trace)
        except JudgeError as exc:
            self._report(exc.calls)
            raise
        self._report(judgment.calls)
        return judgment

    async def aclose(self) -> None:
        """Close the wrapped judge."""
        await self.judge.aclose()

    def _report(self, calls: list[JudgeCall]) -> None:
        for call in calls:
            self.observer.request(call.model, "ok", call.latency_ms / 1000, call.input_tokens, call.output_tokens,
                                  cache_read_input_tokens=call.cache_read_input_tokens,
                                  cache_creation_input_tokens=call.cache_creation_input_tokens)


def _llm_prompt_version() -> str:
    from ragpulse.judges.prompt import PROMPT_VERSION  # noqa: PLC0415

    return PROMPT_VERSION


def _local_prompt_version() -> str:
    from ragpulse.judges.local import PROMPT_VERSION  # noqa: PLC0415

    return PROMPT_VERSION


JUDGES: dict[str, JudgeKind] = {kind.name: kind for kind in (
    JudgeKind(name="none", billable=False, remote=False, offline=True, heuristic=False, factory=None),
    JudgeKind(name="heuristic", billable=False, remote=False, offline=True, heuristic=True, factory=_local,
              prompt_version=_local_prompt_version),
    JudgeKind(name="anthropic", billable=True, remote=True, offline=False, heuristic=False, prompt_cache=True,
              factory=_anthropic, tasks=_anthropic_tasks, batch_api=_anthropic_batches,
              model=lambda settings: settings.judge_model, prompt_version=_llm_prompt_version,
              missing=lambda settings: () if settings.anthropic_credentials else ("ANTHROPIC_API_KEY",)),
    # Billable though often free: a self-hosted model has no price and costs 0 (price_known false in a dry run).
    JudgeKind(name="openai", billable=True, remote=True, offline=False, heuristic=False, factory=_openai,
              batch_api=_openai_batches, batch_offered=lambda settings: None if settings.openai_batch else (
                  "its server offers no batch API here: set RAGPULSE_OPENAI_BATCH=1 where it has OpenAI's Batch API "
                  "(api.openai.com does; most self-hosted servers do not)"),
              tasks=_openai_tasks,
              model=lambda settings: settings.openai_model, prompt_version=_llm_prompt_version,
              missing=lambda settings: tuple(name for name, value in (
                  ("RAGPULSE_OPENAI_BASE_URL", settings.openai_base_url),
                  ("RAGPULSE_OPENAI_MODEL", settings.openai_model)) if not value)),
)}
"""Judge name -> its declaration, in the order help texts and errors list them."""

ALIASES: dict[str, str] = JUDGE_ALIASES
"""Old judge name -> its current one, still accepted (with a deprecation warning) so that configs, CI files and
batches written against the old name keep working for a release."""


def canonical(name: str) -> str:
    """The current name of the judge `name` (an alias resolved); any other name unchanged."""
    return ALIASES.get(name, name)


def _kind(name: str) -> JudgeKind:
    """The declaration of the judge `name`, an old name (a job stored before a rename) resolved."""
    return JUDGES[canonical(name)]


def deprecation(name: str | None) -> str | None:
    """The warning to give when a judge is asked for by an old name, or None."""
    if name not in ALIASES:
        return None
    return (f"judge `{name}` is deprecated and will be refused in a later release: it is now called "
            f"`{ALIASES[name]}` (an offline heuristic with no measured accuracy on your data; its figures are "
            "labelled as a heuristic's and never page)")


def names() -> tuple[str, ...]:
    """Every name a batch, RAGPULSE_JUDGE or the CLI may choose, `none` included."""
    return tuple(JUDGES)


def judging_names() -> tuple[str, ...]:
    """Names of the judges that judge traces (every one but `none`): the values of the `judge` label."""
    return tuple(name for name, kind in JUDGES.items() if kind.factory is not None)


def current_prompt_versions() -> dict[str, str]:
    """Judging judge name -> the prompt version its judgments carry now."""
    return {name: kind.prompt_version() for name, kind in JUDGES.items() if kind.prompt_version is not None}


def unconfigured(name: str, settings: Settings) -> str | None:
    """Why the judge `name` cannot judge under `settings` (what to set on the service), or None when it can."""
    missing = _kind(name).missing(settings)
    if not missing:
        return None
    offline = ", ".join(n for n, kind in JUDGES.items() if kind.offline and kind.factory is not None)
    return (f"judge {name} is not configured on this service: set {' and '.join(missing)} in the service's "
            f"environment and restart it (the credentials belong to the service, not to the client), or ask for "
            f"another judge ({offline} needs no credentials but is an unmeasured heuristic)")


def default_judge_problem(settings: Settings) -> str | None:
    """Why the service's default judge (RAGPULSE_JUDGE) cannot judge, and what that does to each path; None when it
    can. Production traces are still accepted (refusing them would lose their retrieval metrics too): this is what
    the API and workers log at start-up, /readyz answers and the landing page shows. With no judge (`none`, the
    default without an LLM judge) every trace keeps its retrieval metrics and checks, and generation is not judged."""
    if not judges_traces(settings.default_judge):
        return f"{NOT_JUDGED}; retrieval metrics and security checks still run on every trace"
    reason = unconfigured(settings.default_judge, settings)
    if reason is None:
        return None
    return (f"the service's default judge (RAGPULSE_JUDGE) is {settings.default_judge}, but {reason}. Until then "
            "every production trace (POST /v1/traces, OTLP) keeps its retrieval metrics but ends judge_error, and a "
            "batch that names no judge is refused")


NOT_JUDGED = ("generation metrics not judged: no LLM judge is configured. Set ANTHROPIC_API_KEY (and "
              "RAGPULSE_JUDGE_BASE_URL for a gateway), or RAGPULSE_JUDGE=openai with RAGPULSE_OPENAI_BASE_URL and "
              "RAGPULSE_OPENAI_MODEL for an OpenAI-compatible server such as vLLM or Ollama, on the service; "
              "`judge: heuristic` opts in to an offline heuristic whose accuracy on your data is unmeasured")
"""What every surface says where generation metrics were not judged, naming what to configure."""


def judges_traces(name: str | None) -> bool:
    """True when `name` picks a judge that judges traces; False for `none` and for no name."""
    return name is not None and _kind(name).factory is not None


def is_billable(name: str | None) -> bool:
    """True when calls of the judge `name` cost money (budgets apply); False for no name."""
    return name is not None and _kind(name).billable


def caches_prompt(name: str | None) -> bool:
    """True when the judge `name` marks its fixed prefix for the provider's prompt cache; False for no name."""
    return name is not None and _kind(name).prompt_cache


def batch_refusal(name: str | None, settings: Settings) -> str | None:
    """Why `options.delivery` batch cannot be honoured with the judge `name` under `settings`, or None: a remote judge
    whose server has no batch API refuses it; a judge that sends nothing to a provider (heuristic, none) ignores it."""
    if name is None or not _kind(name).remote:
        return None
    kind = _kind(name)
    reason = "it has no batch API" if kind.batch_api is None else kind.batch_offered(settings)
    return None if reason is None else f"judge {name} cannot deliver in batches: {reason}; use delivery interactive"


def delivers_in_batches(name: str | None, delivery: str, settings: Settings | None = None) -> bool:
    """True when a job of judge `name` and `options.delivery` sends its judge requests through a batch API (its
    server offers one under `settings`; without settings, whether the judge has one at all)."""
    if delivery != "batch" or name is None or _kind(name).batch_api is None:
        return False
    return settings is None or _kind(name).batch_offered(settings) is None


def batch_api(name: str, settings: Settings) -> BatchApi:
    """The batch API client of the judge `name` (delivers_in_batches must hold). Build it inside its event loop."""
    factory = _kind(name).batch_api
    if factory is None:
        raise ValueError(f"judge {name} has no batch API")
    return factory(settings)


def is_heuristic(name: str | None) -> bool:
    """True when the judge `name` is an offline heuristic rather than an LLM; False for no name."""
    return name is not None and _kind(name).heuristic


def model_for(name: str | None, settings: Settings) -> str | None:
    """The model the judge `name` judges with under `settings`; None for no name, `none`, and `heuristic`."""
    return None if name is None else _kind(name).model(settings)


def models(settings: Settings) -> list[str]:
    """Every configured LLM judge model, once each (the `model` label values exposed before their first call)."""
    return list(dict.fromkeys(m for kind in JUDGES.values() if (m := kind.model(settings)) is not None))


def takes_tasks(name: str | None) -> bool:
    """True when the judge `name` is an LLM that can take other structured tasks (write synthetic questions, compare
    two answers pairwise)."""
    return name is not None and _kind(name).tasks is not None


def task_judges() -> tuple[str, ...]:
    """Names of the judges that can take other structured tasks (the values generation and pairwise judging
    accept)."""
    return tuple(name for name in JUDGES if takes_tasks(name))


def make_task_client(name: str, settings: Settings, task: ToolTask,
                     observer: JudgeObserver | None = None) -> StructuredJudge:
    """An LLM client of the judge `name` for `task`, its calls carrying `task.version` (`takes_tasks(name)` must
    hold). Build it inside its event loop."""
    factory = _kind(name).tasks
    if factory is None:
        raise ValueError(f"judge {name} cannot take structured tasks")
    return factory(settings, task, observer)


def make_judge(name: str, settings: Settings, observer: JudgeObserver | None = None) -> Judge | None:
    """The judge called `name`, or None for `none`. Build it inside the event loop that will use it."""
    factory = _kind(name).factory
    return None if factory is None else factory(settings, observer)
