"""The judge catalog: every judge declared once, and every list of judge names derived from it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import get_args

import pytest

from ragpulse.ops import cli
from ragpulse.intake.estimate import estimate_batch, prefix_tokens
from ragpulse.exceptions import ConfigError
from ragpulse.judges import kinds
from ragpulse.judges.prompt import JUDGE_TASK
from ragpulse.intake.warnings import data_quality_warnings
from ragpulse.model.trace import BatchOptions, JudgeName, RetrievedDoc, Trace
from ragpulse.config import defaults
from ragpulse.config.settings import Settings

MODEL = "claude-sonnet-4-6"
PRICES = {MODEL: (3.0, 15.0)}


def traces(generator_model: str | None = None) -> list[Trace]:
    docs = [RetrievedDoc(id="d1", text="Paris is the capital of France.")]
    return [Trace(query="capital of France?", retrieved_docs=docs, answer="Paris.", gold_doc_ids=["d1"],
                  generator_model=generator_model)]


def test_the_wire_schema_names_exactly_the_catalogued_judges() -> None:
    # msgspec needs a Literal to validate `options.judge`; this keeps it from drifting from the kinds.
    assert sorted(get_args(JudgeName)) == sorted([*kinds.names(), *kinds.ALIASES])


def test_settings_accept_exactly_the_catalogued_judges_in_order() -> None:
    # config/ sits below judges/, so settings check RAGPULSE_JUDGE against this tuple, not the catalog.
    assert defaults.JUDGE_NAMES == kinds.names()


def test_every_judging_kind_builds_a_judge_that_carries_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused")
    settings = Settings.from_env({})

    async def build(name: str) -> str:
        judge = kinds.make_judge(name, settings)
        assert judge is not None
        await judge.aclose()
        return judge.name

    assert kinds.make_judge("none", settings) is None
    assert kinds.judging_names() == ("heuristic", "anthropic", "openai")
    assert [asyncio.run(build(name)) for name in kinds.judging_names()] == list(kinds.judging_names())


def test_capabilities() -> None:
    assert [n for n in kinds.names() if kinds.is_billable(n)] == ["anthropic", "openai"]
    assert [n for n in kinds.names() if kinds.is_heuristic(n)] == ["heuristic"]
    assert [n for n in kinds.names() if kinds.JUDGES[n].remote] == ["anthropic", "openai"]
    assert not kinds.judges_traces(None) and not kinds.is_billable(None) and not kinds.is_heuristic(None)


def test_each_kind_names_the_model_its_settings_give() -> None:
    settings = Settings.from_env({"RAGPULSE_OPENAI_MODEL": "qwen2.5:14b"})
    assert [kinds.model_for(n, settings) for n in kinds.names()] == [None, None, MODEL, "qwen2.5:14b"]
    assert kinds.model_for(None, settings) is None and kinds.models(settings) == [MODEL, "qwen2.5:14b"]
    assert kinds.models(Settings.from_env({})) == [MODEL]


def test_settings_and_cli_accept_every_name_and_only_those(capsys: pytest.CaptureFixture[str]) -> None:
    for name in kinds.names():
        assert Settings.from_env({"RAGPULSE_JUDGE": name}).default_judge == name
        assert cli._parser().parse_args(["eval", "traces.json", "--judge", name]).judge == name
    with pytest.raises(ConfigError, match="one of none, heuristic, anthropic, openai, got 'gpt'"):
        Settings.from_env({"RAGPULSE_JUDGE": "gpt"})
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["eval", "traces.json", "--judge", "gpt"])
    assert "invalid choice: 'gpt'" in capsys.readouterr().err


def test_only_a_billable_judge_is_priced_and_none_makes_no_calls() -> None:
    priced = {name: estimate_batch(traces(), BatchOptions(judge=name), MODEL, PRICES) for name in kinds.names()}
    assert priced["anthropic"].cost_usd > 0 and priced["anthropic"].model == MODEL
    anthropic, openai = priced["anthropic"], priced["openai"]
    assert openai.cost_usd > 0                                              # priced by its model, not its name
    # only the judge that marks its prefix for the cache has it billed as a cache write, and on a model whose minimum
    # the short prefix misses (Sonnet 4.6: 2,048) that prefix carries the worked examples that make it cacheable
    padded = JUDGE_TASK.for_model(MODEL)
    assert anthropic.cache_creation_input_tokens == prefix_tokens(padded) > prefix_tokens(JUDGE_TASK)
    assert openai.input_tokens == anthropic.input_tokens + prefix_tokens(JUDGE_TASK)
    assert openai.cache_creation_input_tokens == 0
    # where the short prefix reaches the minimum (Sonnet 4.5: 1,024), both judges send the same tokens
    short = {name: estimate_batch(traces(), BatchOptions(judge=name), "claude-sonnet-4-5", PRICES)
             for name in ("anthropic", "openai")}
    cached = short["anthropic"]
    assert short["openai"].input_tokens == cached.input_tokens + cached.cache_creation_input_tokens
    assert (priced["heuristic"].cost_usd, priced["heuristic"].model, priced["heuristic"].judge_calls) == (0.0, None, 1)
    assert priced["none"].judge_calls == 0


def test_only_an_llm_judge_warns_about_self_evaluation() -> None:
    def codes(name: str) -> list[str]:
        return [w.code for w in data_quality_warnings(traces(MODEL), BatchOptions(judge=name), MODEL)]

    assert codes("anthropic") == ["self_evaluation"] == codes("openai")
    assert codes("heuristic") == [] and codes("none") == []


def test_reading_the_catalog_does_not_load_the_judges() -> None:
    # Settings and the CLI import the catalog; the SDKs load only where a judge is built.
    code = ("import sys, ragpulse.ops.cli; "
            "print(sorted({'anthropic', 'openai', 'ragpulse.judges.local'} & set(sys.modules)))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
