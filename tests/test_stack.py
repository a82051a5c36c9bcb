"""End to end: `ragpulse up` as a subprocess, `ragpulse eval examples/...` against it, clean shutdown."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ragpulse.ops.redis_server import free_port
from tests.support import ROOT, Proc, child_env, children_of, spawn, wait_until_up

pytestmark = pytest.mark.integration
EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


@pytest.fixture
def ragpulse_up(tmp_path: Path):
    """`ragpulse up` with no REDIS_URL, so it starts its own Redis, as a new user would."""
    port = free_port()
    env = child_env("unused", {"RAGPULSE_PORT": str(port)})
    env.pop("REDIS_URL")
    proc = spawn([sys.executable, "-m", "ragpulse.ops.cli", "up", "--port", str(port), "--workers", "2"],
                 env, tmp_path / "up.log")
    url = f"http://127.0.0.1:{port}"
    wait_until_up(url, proc)
    yield url, proc
    proc.stop()


def test_up_then_eval_examples_then_clean_stop(ragpulse_up: tuple[str, Proc]) -> None:
    url, up = ragpulse_up
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.ops.cli", "eval", str(EXAMPLES), "--server", url, "--k", "1", "5", "10",
         "--judge", "local"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=child_env("unused"),
    )
    assert result.returncode == 0, result.stderr
    report = result.stdout
    assert "recall@5" in report and "ndcg@10" in report and "BY QUESTION TYPE" in report and "BY SOURCE" in report
    for generation_metric in ["faithfulness", "hallucination_rate", "unanswerable_hallucination_rate",
                              "answer_relevance", "context_relevance", "correctness", "abstention_recall"]:
        assert re.search(rf"^  {generation_metric} +\d\.\d{{3}} +\[", report, re.M), generation_metric
    assert "judge: local (65)" in report and "offline heuristic" in report
    assert "DIAGNOSTIC MATRIX" in report and "primary issue:" in report
    assert "65/65 finished" in result.stderr                       # the progress bar reached the end
    job_id = re.search(r"job ([0-9a-f]{32})", report).group(1)
    results = httpx.get(f"{url}/v1/jobs/{job_id}/results", params={"limit": 1000}).json()["items"]
    assert len(results) == 65 and {r["status"] for r in results} == {"ok"}

    kids = children_of(up.process.pid)
    assert len(kids) >= 4                                          # redis, api, two workers
    up.process.send_signal(signal.SIGTERM)
    assert up.process.wait(30) == 0
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in kids if alive(pid)], up.output()


def test_eval_exits_non_zero_when_the_server_is_unreachable() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.ops.cli", "eval", str(EXAMPLES), "--server", f"http://127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env=child_env("unused"),
    )
    assert result.returncode != 0 and "cannot reach" in result.stderr
