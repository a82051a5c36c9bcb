"""The HTML report page over real HTTP and real workers, checked in a real headless browser (Debian's chromium)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from ragpulse.metrics.registry import GENERATION
from tests.support import start_tags, wait_for_job

pytestmark = pytest.mark.integration

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
"""Screenshots kept after the run (git ignores the folder)."""

WARRANTY = {"id": "warranty", "text": "The warranty lasts two years from the date of purchase."}
SHIPPING = {"id": "shipping", "text": "Orders ship within three working days. Shipping is free above 50 EUR."}
HOSTILE = "<script>alert('x')</script><img src=https://evil.example/x.png onerror=alert(1)>"

TRACES = [
    {"trace_id": "ok-1", "query": "How long is the warranty?", "answer": "The warranty lasts two years.",
     "retrieved_docs": [WARRANTY, SHIPPING], "gold_doc_ids": ["warranty"], "question_type": "single_fact"},
    {"trace_id": "bad-number", "query": "How long is the warranty?", "answer": "The warranty lasts five years.",
     "retrieved_docs": [WARRANTY], "gold_doc_ids": ["warranty"], "question_type": "single_fact"},
    {"trace_id": "missed-doc", "query": "When do orders ship?", "answer": "Orders ship within three working days.",
     "retrieved_docs": [WARRANTY], "gold_doc_ids": ["shipping"], "question_type": "procedural"},
    {"trace_id": "hostile", "query": "Is shipping free?", "answer": f"Shipping is always free. {HOSTILE}",
     "retrieved_docs": [SHIPPING], "gold_doc_ids": ["shipping"], "question_type": "procedural"},
]


@pytest.fixture(scope="module")
def finished_job(stack) -> str:  # noqa: ANN001 - the session's LiveStack
    with httpx.Client(base_url=stack.url, timeout=30) as http:
        accepted = http.post("/v1/batches", json={"traces": TRACES, "options": {"judge": "local", "k": [1, 5]}})
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        assert wait_for_job(http, job_id)["status"] == "finished"
        return job_id


def test_the_page_is_self_contained_and_escapes_trace_text(client: httpx.Client, finished_job: str) -> None:
    response = client.get(f"/v1/jobs/{finished_job}/report.html")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in response.headers["content-security-policy"]
    page = response.text
    tags = _tags(page)
    assert not [(tag, attrs) for tag, attrs in tags if any(v and "//" in v for k, v in attrs if k in URL_ATTRS)]
    assert "script" not in {tag for tag, _ in tags} and "img" not in {tag for tag, _ in tags}  # theirs is escaped
    assert "&lt;script&gt;" in page and "evil.example" in page                  # the hostile text is shown as text
    assert "Offline heuristic judge" in page                                    # the local judge says what it is


def test_not_ready_and_foreign_jobs(client: httpx.Client) -> None:
    assert client.get(f"/v1/jobs/{'0' * 32}/report.html").status_code == 404


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed: apt-get install chromium")
def test_a_browser_renders_the_figures_of_the_json_report(stack, client: httpx.Client, finished_job: str) -> None:  # noqa: ANN001
    report = client.get(f"/v1/jobs/{finished_job}/report").json()
    url = f"{stack.url}/v1/jobs/{finished_job}/report.html"
    dom = _chromium("--dump-dom", url).stdout
    shown = dict(re.findall(r"data-metric=\"([^\"]+)\".*?data-mean=\"([0-9.]+)\"", dom, re.S))
    expected = {name: est["mean"] for name, est in report["retrieval"].items()}
    expected |= {m.name: report["generation"][m.name]["mean"] for m in GENERATION if report["generation"][m.name]}
    assert expected and set(expected) <= set(shown)
    for name, mean in expected.items():
        assert float(shown[name]) == pytest.approx(mean, abs=1e-6), name
    assert f'data-primary-issue="{report["diagnostic_matrix"]["primary_issue"]}"' in dom
    for name, cell in report["diagnostic_matrix"]["cells"].items():
        assert re.search(rf'data-cell="{name}"><b>{cell["count"]}</b>', dom), name
    failing = set(re.findall(r'class="trace" data-trace-id="([^"]+)"', dom))
    assert {"bad-number", "missed-doc", "hostile"} <= failing and "ok-1" not in failing
    assert 'data-verdict="contradicted"' in dom or 'data-verdict="unsupported"' in dom
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report_page.png"
    shot.unlink(missing_ok=True)
    _chromium(f"--screenshot={shot}", "--window-size=1280,800", url)
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


URL_ATTRS = {"src", "href", "action", "srcset", "poster", "data"}


def _tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    found = start_tags(page)
    assert len(found) > 50
    return found


def _chromium(*args: str) -> subprocess.CompletedProcess:
    command = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--hide-scrollbars", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done
