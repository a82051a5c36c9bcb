"""The web UI's compare and app pages end to end: real Redis, the API and a worker finishing a baseline and a
candidate.

The page's figures (delta, interval, change of every metric; the regressed traces) must equal
GET /v1/jobs/{candidate}/compare?baseline= in headless chromium at 800 and 1,400 px, with no sideways scrolling of the
page; a login returns to it; another tenant's job is a 404 naming its input; bad or missing ids a 400 naming
`query.candidate` / `query.baseline`. The app page's windows must equal GET /v1/monitor/{app}?window= for each
window, for the session's tenant only. Screenshots are kept under the pytest tmp dir (`compare-shots/`).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from service.review_login import REVIEW_CSP
from tests.browser import Browser
from tests.support import finished_job, page_apis, wait_for_job

pytestmark = pytest.mark.integration

WIDTHS = (800, 1400)
N = 8
OPEN_APP = f"shop-{uuid.uuid4().hex[:8]}"
"""The open API's tenant (`default`) is shared with other tests: its app here is this module's own."""


def traces(app: str, candidate: bool) -> list[dict]:
    """Every baseline trace finds its gold document first; the candidate misses it on the even traces (regressions
    of recall and nDCG), with a query that must stay text."""
    def docs(i: int) -> list[dict]:
        ids = ["d3", "d4"] if candidate and i % 2 == 0 else ["d1", "d2"]
        return [{"id": d, "text": f"document {d}"} for d in ids]
    return [{"trace_id": f"{app}-{i}", "app": app, "query": f"question {i} <b>not bold</b>",
             "retrieved_docs": docs(i), "gold_doc_ids": ["d1"]} for i in range(N)]


def submit(http: httpx.Client, app: str, candidate: bool) -> str:
    # production, so that the app page (the production monitor) has the tenants' traces to show
    return finished_job(http, {"traces": traces(app, candidate), "options": {
        "judge": "none", "run": "cand" if candidate else "base", "environment": "production"}})


@dataclass
class Stack:
    open_url: str
    keyed_url: str
    keys: dict[str, str]
    pairs: dict[str, tuple[str, str]]
    """`open` and each tenant -> (candidate, baseline) job ids."""

    def tenant(self, prefix: str) -> str:
        return next(t for t in self.keys if t.startswith(prefix))


@pytest.fixture(scope="module")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with page_apis(redis_url, tmp_path_factory.mktemp("uic"), "uic") as apis:
        pairs = {}
        with httpx.Client(base_url=apis.open_url, timeout=30) as http:
            pairs["open"] = (submit(http, OPEN_APP, True), submit(http, OPEN_APP, False))
        for tenant, key in apis.keys.items():
            with httpx.Client(base_url=apis.keyed_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
                pairs[tenant] = (submit(http, "shop", True), submit(http, "shop", False))
                if tenant.startswith("globex"):
                    submit(http, "shop", True)          # its app `shop` counts more traces than acme's
        yield Stack(apis.open_url, apis.keyed_url, apis.keys, pairs)


def page_url(candidate: str, baseline: str) -> str:
    return f"/compare?candidate={candidate}&baseline={baseline}"


def test_login_returns_to_the_page_and_other_tenants_jobs_are_404(stack: Stack) -> None:
    acme, globex = stack.tenant("acme"), stack.tenant("globex")
    mine, theirs = stack.pairs[acme], stack.pairs[globex]
    with httpx.Client(base_url=stack.keyed_url, timeout=30, follow_redirects=True) as http:
        first = http.get(page_url(*mine))
        assert first.url.path == "/review/login" and first.url.params["next"] == page_url(*mine)
        page = http.post("/review/login", data={"api_key": stack.keys[acme], "next": page_url(*mine)})
        assert page.status_code == 200 and page.url.path == "/compare", page.text
        assert page.headers["content-security-policy"] == REVIEW_CSP
        assert all(job in page.text for job in mine) and "<b>not bold</b>" not in page.text
        for candidate, baseline, named in ((theirs[0], mine[1], "query.candidate"),
                                           (mine[0], theirs[1], "query.baseline")):
            foreign = http.get(page_url(candidate, baseline))
            assert foreign.status_code == 404 and named in foreign.text, foreign.text


@pytest.mark.parametrize(("query", "named"), [
    ("", "query.candidate"), ("", "query.baseline"), ("candidate=abc", "query.baseline"),
    ("baseline=abc", "query.candidate"),
    ("candidate=&baseline=abc", "query.candidate"), (f"candidate=abc&baseline={'x' * 65}", "query.baseline"),
])
def test_bad_or_missing_ids_are_400_naming_the_parameter(stack: Stack, query: str, named: str) -> None:
    with httpx.Client(base_url=stack.open_url, timeout=30) as http:
        answer = http.get(f"/compare?{query}")
    assert answer.status_code == 400 and named in answer.text, (query, answer.text)


DOM_METRICS = """[...document.querySelectorAll('table.metrics tbody tr')].map(r => ({
  metric: r.dataset.metric, delta: +r.dataset.delta, ci95: [+r.dataset.lo, +r.dataset.hi], change: r.dataset.change,
  shown: [r.querySelector('[data-shown=delta]').textContent, r.querySelector('[data-shown=ci]').textContent]}))"""
DOM_REGRESSIONS = """[...document.querySelectorAll('table.regressions tbody tr')].map(r => ({
  trace_id: r.dataset.trace, sides: [...r.querySelectorAll('[data-side] li')].length > 0
    && r.querySelectorAll('[data-side]').length === 2}))"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed: apt-get install chromium")
def test_page_figures_equal_the_json_in_chromium_at_800_and_1400(
        stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> None:
    candidate, baseline = stack.pairs["open"]
    with httpx.Client(base_url=stack.open_url, timeout=30) as http:
        answer = http.get(f"/v1/jobs/{candidate}/compare", params={"baseline": baseline}).json()
    metrics = [{"metric": key, "delta": m["delta"], "ci95": m["ci95"], "change": m["change"],
                "shown": [f"{m['delta']:+.3f}", f"[{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}]"]}
               for group in ("retrieval", "generation") for key, m in answer[group].items()]
    regressions = [{"trace_id": r["trace_id"], "sides": True} for r in answer["regressions"]]
    assert len(regressions) == N // 2 and any(m["delta"] < 0 for m in metrics)     # the data has something to show
    shots = tmp_path_factory.mktemp("compare-shots")
    browser = Browser(tmp_path_factory.mktemp("chromium"))
    try:
        for width in WIDTHS:
            browser.resize(width)
            browser.open(stack.open_url + page_url(candidate, baseline))
            assert browser.eval(DOM_METRICS) == metrics, width
            assert browser.eval(DOM_REGRESSIONS) == regressions, width
            assert browser.overflow() == 0, width
            browser.screenshot(shots / f"compare-{width}.png")
            assert (shots / f"compare-{width}.png").stat().st_size > 0
    finally:
        browser.close()


DOM_WINDOWS = """[...document.querySelectorAll('table.windows tbody tr')].map(r => ({
  window: r.dataset.window, received: +r.querySelector('[data-received]').dataset.received,
  processed: +r.querySelector('[data-processed]').dataset.processed,
  judged: +r.querySelector('[data-judged]').dataset.judged,
  rates: Object.fromEntries([...r.querySelectorAll('[data-rate]')].map(c => [c.dataset.rate,
    c.dataset.value === undefined ? null : [+c.dataset.value, +c.dataset.n]]))}))"""
RATES = ("hallucination_rate", "unanswerable_hallucination_rate", "abstention_rate", "judge_error_rate")


def monitor_rows(http: httpx.Client, app: str) -> list[dict]:
    rows = []
    for window in ("5m", "1h", "24h"):
        view = http.get(f"/v1/monitor/{app}", params={"window": window}).json()
        rows.append({"window": window, "received": view["traces_received"], "processed": view["traces_processed"],
                     "judged": view["judged"], "rates": {key: view[key] and [view[key]["rate"], view[key]["n"]]
                                                         for key in RATES}})
    return rows


def test_app_page_shows_the_sessions_tenant_only(stack: Stack) -> None:
    acme, globex = stack.tenant("acme"), stack.tenant("globex")
    with httpx.Client(base_url=stack.keyed_url, timeout=30, follow_redirects=True) as http:
        assert http.get("/apps/shop").url.params["next"] == "/apps/shop"
        page = http.post("/review/login", data={"api_key": stack.keys[acme], "next": "/apps/shop"})
        assert page.status_code == 200 and page.url.path == "/apps/shop", page.text
        assert page.headers["content-security-policy"] == REVIEW_CSP
        received = {t: http.get("/v1/monitor/shop", headers={"Authorization": f"Bearer {stack.keys[t]}"}).json()[
            "traces_received"] for t in (acme, globex)}
        assert received[acme] == 2 * N and received[globex] == 3 * N
        assert f"data-received={received[acme]}>" in page.text
        assert f"data-received={received[globex]}>" not in page.text
        assert "data-corrected-none" in page.text and "data-agreement-none" in page.text   # no labels: not measured
        bad = http.get("/apps/a%20b")
        assert bad.status_code == 400 and "path.app" in bad.text, bad.text


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed: apt-get install chromium")
def test_app_page_figures_equal_the_monitor_in_chromium_at_800_and_1400(
        stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> None:
    shots = tmp_path_factory.mktemp("app-shots")
    browser = Browser(tmp_path_factory.mktemp("chromium"))
    try:
        with httpx.Client(base_url=stack.open_url, timeout=30) as http:
            for width in WIDTHS:
                browser.resize(width)
                browser.open(stack.open_url + f"/apps/{OPEN_APP}")
                rows = monitor_rows(http, OPEN_APP)
                assert rows[-1]["received"] == 2 * N                    # the data has something to show
                assert browser.eval(DOM_WINDOWS) == rows, width
                assert browser.overflow() == 0, width
                browser.screenshot(shots / f"app-{width}.png")
    finally:
        browser.close()


# -- the job page links to the compare page ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run_pair(stack: Stack) -> tuple[str, str]:
    """Two jobs of one run on the open API, the older first (an app of their own: OPEN_APP's counts stay as they are)."""
    app, run = f"{OPEN_APP}-nav", f"nav-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=stack.open_url, timeout=30) as http:
        jobs = []
        for candidate in (False, True):
            accepted = http.post("/v1/batches", json={"traces": traces(app, candidate),
                                                      "options": {"judge": "none", "run": run}})
            assert accepted.status_code == 202, accepted.text
            jobs.append(accepted.json()["job_id"])
            assert wait_for_job(http, jobs[-1])["status"] == "finished"
    return jobs[0], jobs[1]


def test_the_job_page_links_to_compare_with_the_previous_job_of_its_run(
        stack: Stack, run_pair: tuple[str, str]) -> None:
    older, newer = run_pair
    with httpx.Client(base_url=stack.open_url, timeout=30, follow_redirects=True) as http:
        page = http.get(f"/jobs/{newer}")
        assert page.status_code == 200 and page.headers["content-security-policy"] == REVIEW_CSP   # forms may submit
        href = f"/compare?candidate={newer}&amp;baseline={older}"
        assert f'<a data-previous href="{href}">' in page.text                                    # before: no link
        assert f'<input type=hidden name=candidate value="{newer}">' in page.text
        compared = http.get(href.replace("&amp;", "&"))
        assert compared.status_code == 200 and f"value=\"{older}\"" in compared.text
        first = http.get(f"/jobs/{older}").text                  # nothing of its run or app before it
        assert "data-previous-none" in first and "data-previous " not in first
        api_page = http.get(f"/v1/jobs/{newer}/report.html").text
        assert "data-previous" not in api_page and "/compare" not in api_page   # the API's page (and saved files): none


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed: apt-get install chromium")
def test_the_job_page_compare_form_opens_the_compare_page_in_chromium_at_800_and_1400(
        stack: Stack, run_pair: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> None:
    older, newer = run_pair
    shots = tmp_path_factory.mktemp("job-nav-shots")
    browser = Browser(tmp_path_factory.mktemp("chromium"))
    try:
        for width in WIDTHS:
            browser.resize(width)
            browser.open(stack.open_url + f"/jobs/{newer}")
            assert browser.eval("document.querySelector('[data-previous]').getAttribute('href')") == \
                f"/compare?candidate={newer}&baseline={older}"
            assert browser.overflow() == 0, width
            browser.screenshot(shots / f"job-{width}.png")
            browser.eval("document.querySelector('[data-compare-form] input[name=baseline]').focus()")
            browser.type(older)
            browser.press("Enter", loads=True)
            assert browser.eval("location.pathname + location.search") == \
                f"/compare?candidate={newer}&baseline={older}", width
            assert browser.eval("document.querySelectorAll('table.metrics tbody tr').length") > 0, width
    finally:
        browser.close()
