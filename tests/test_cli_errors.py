"""The CLI's own failures as a user meets them (issue 25, defects 4 and 7): output files checked before anything runs
and a failed write never a traceback nor the gate's "failed" code; messages that name the fix (a 401 names --api-key
and RAGPULSE_API_KEY, a gate config error names the metric, the baseline and the trace wrapper).

Most run the CLI in-process against tests.fake_api (which records every request, so "before anything" is checked);
the 401s come from a real API with keys; the unrelated-baseline warning from the session's real stack."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from ragpulse.ops import cli
from ragpulse.ops.gate import GATE_BAD_INPUT, GATE_PASS
from tests.fake_api import JOB_ID, Answer, FakeApi
from tests.support import start_api, wait_for_job

if TYPE_CHECKING:
    from tests.conftest import LiveStack

TRACE = {"trace_id": "t-1", "query": "q", "retrieved_docs": [{"id": "d", "text": "x"}], "gold_doc_ids": ["d"]}
PASSING = '[thresholds."recall@5"]\nmin = 0.5\n'
"""A gate config FakeApi's report passes (its every trace finds its document): exit 0 unless something else fails."""


def trace_file(tmp_path: Path, traces: list[dict] | None = None) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces or [TRACE]))
    return path


def gate_config(tmp_path: Path, text: str = PASSING) -> Path:
    path = tmp_path / "gate.toml"
    path.write_text(text)
    return path


def command(name: str, tmp_path: Path, server: str, output: Path) -> list[str]:
    """`name` with its output option pointing at `output`, against `server`."""
    file = str(trace_file(tmp_path))
    return {"eval": ["eval", file, "--server", server, "--html", str(output)],
            "report": ["report", JOB_ID, "--server", server, "--html", str(output)],
            "gate": ["gate", file, "--server", server, "--config", str(gate_config(tmp_path)),
                     "--junit", str(output)]}[name]


OPTION = {"eval": "--html", "report": "--html", "gate": "--junit"}


# -- defect 4: output files ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["eval", "report", "gate"])
@pytest.mark.parametrize("where", ["missing dir", "a directory"])
def test_an_unwritable_output_exits_2_before_anything_is_sent(
        name: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "nope" / "r.out" if where == "missing dir" else tmp_path
    with FakeApi() as api:
        code = cli.main(command(name, tmp_path, api.url, output))
        assert api.seen == []                            # before: every trace posted and evaluated first
    captured = capsys.readouterr()
    assert code == cli.EXIT_USAGE == GATE_BAD_INPUT      # before: 1, the gate's "failed"
    assert f"ragpulse {name}: {OPTION[name]} {output}: " in captured.err
    assert ("no such directory" if where == "missing dir" else "is a directory") in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


@pytest.mark.parametrize("name", ["eval", "report", "gate"])
def test_a_write_that_fails_after_the_run_exits_2_without_a_traceback(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full = Path("/dev/full")                             # passes every check, then ENOSPC on write
    with FakeApi() as api:
        code = cli.main(command(name, tmp_path, api.url, full))
        assert api.seen                                  # it ran: the failure is the write's
    captured = capsys.readouterr()
    assert code == cli.EXIT_USAGE == GATE_BAD_INPUT, captured.err
    assert f"{OPTION[name]} /dev/full: cannot write: No space left on device" in captured.err
    assert "Traceback" not in captured.err
    printed = f"job {JOB_ID}" if name == "report" else "recall@5"
    assert printed in captured.out                       # the report or the verdicts were printed all the same


def test_a_writable_junit_file_is_written_and_the_gate_passes(tmp_path: Path) -> None:
    output = tmp_path / "gate.xml"
    with FakeApi() as api:
        assert cli.main(command("gate", tmp_path, api.url, output)) == GATE_PASS
    assert output.read_text().startswith("<?xml") and 'name="recall@5"' in output.read_text()


# -- defect 7: messages that name the fix ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def keyed(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real API that wants a key (no worker: a 401 comes before any work)."""
    url, api = start_api(redis_url, tmp_path_factory.mktemp("keyed"),
                         {"RAGPULSE_QUEUE": f"keyed-{uuid.uuid4().hex[:8]}", "RAGPULSE_API_KEYS": "acme:right-key"})
    yield url
    api.stop()


@pytest.mark.parametrize("key", [None, "wrong-key"])
@pytest.mark.parametrize("name", ["eval", "gate", "wait", "report", "compare"])
def test_a_401_names_the_api_key_option_and_variable(name: str, key: str | None, keyed: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGPULSE_API_KEY", raising=False)
    file = str(trace_file(tmp_path))
    argv = {"eval": ["eval", file], "gate": ["gate", file], "wait": ["wait", JOB_ID], "report": ["report", JOB_ID],
            "compare": ["compare", JOB_ID, JOB_ID]}[name] + ["--server", keyed]
    code = cli.main(argv + (["--api-key", key] if key else []))
    err = capsys.readouterr().err
    assert code == (GATE_BAD_INPUT if name == "gate" else cli.EXIT_FAILED), err
    assert "HTTP 401" in err and "--api-key" in err and "RAGPULSE_API_KEY" in err, err
    assert "Authorization" not in err                    # before: "send `Authorization: Bearer <api key>`"
    assert ("did not accept the API key sent" in err) == (key is not None)


def test_a_gate_config_type_error_names_the_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = gate_config(tmp_path, '[thresholds.mrr]\nmin = 0.5\n[thresholds."recall@5"]\nmin = "high"\n')
    code = cli.main(["gate", str(trace_file(tmp_path)), "--server", "http://127.0.0.1:9", "--config", str(config)])
    err = capsys.readouterr().err
    assert code == GATE_BAD_INPUT
    assert 'Expected `float | null`, got `str` - at `$.thresholds."recall@5".min`' in err   # before: [...]


def test_a_misspelt_gate_metric_gets_the_close_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = gate_config(tmp_path, '[thresholds."recal@5"]\nmin = 0.8\n')
    code = cli.main(["gate", str(trace_file(tmp_path)), "--server", "http://127.0.0.1:9", "--config", str(config)])
    assert code == GATE_BAD_INPUT
    assert "unknown metric `recal@5` (did you mean recall@5?)" in capsys.readouterr().err


def test_an_unknown_baseline_is_named_as_the_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApi() as api:
        api.push("job", Answer(404, b'{"title": "Not found", "detail": "no job nope for this tenant"}'))
        code = cli.main(["gate", str(trace_file(tmp_path)), "--server", api.url, "--config",
                         str(gate_config(tmp_path)), "--baseline", "nope"])
        assert [route for route, _ in api.seen] == ["job"]      # nothing posted
    err = capsys.readouterr().err
    assert code == GATE_BAD_INPUT
    assert "--baseline nope: the service has no such job" in err and "no job nope" in err


def test_one_unwrapped_trace_is_told_to_wrap_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(TRACE))
    assert cli.main(["eval", str(path), "--server", "http://127.0.0.1:9"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert 'this is one trace: wrap it as {"traces": [ ... ]}' in err    # before: "... list, got null"


def test_the_gate_warns_when_nothing_matched_the_baseline(stack: LiveStack, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    tag = uuid.uuid4().hex[:8]
    with httpx.Client(base_url=stack.url, timeout=30) as http:
        accepted = http.post("/v1/batches", json={"traces": [{**TRACE, "trace_id": f"base-{tag}",
                                                              "query": f"other question {tag}"}],
                                                  "options": {"judge": "none"}})
        assert accepted.status_code == 202, accepted.text
        baseline = accepted.json()["job_id"]
        wait_for_job(http, baseline)
    file = trace_file(tmp_path, [{**TRACE, "trace_id": f"cand-{tag}", "query": f"a question {tag}"}])
    config = gate_config(tmp_path, '[options]\njudge = "none"\n[thresholds."recall@5"]\nmin = 0.5\n')
    cli.main(["gate", str(file), "--server", stack.url, "--config", str(config), "--baseline", baseline])
    assert "ragpulse gate: warning: no trace matched" in capsys.readouterr().err   # before: matched 0, silently
