"""The web UI's landing page and job list end to end: real Redis, the API and a worker finishing batches.

HTTP clients (with a cookie jar, as a browser has) check the login story shared with the review pages, tenant
isolation and that every link of `/` answers 200; headless chromium reads both pages at 800 and 1,400 px, where the
figures in the DOM must equal GET /v1/jobs's and nothing may scroll sideways. Screenshots are kept under the pytest
tmp dir (`ui-shots/`).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from service.review_auth import safe_next
from service.review_login import REVIEW_CSP
from tests.browser import Browser
from tests.support import finished_job, page_apis, start_api

pytestmark = pytest.mark.integration

WIDTHS = (800, 1400)


def traces(app: str, n: int) -> list[dict]:
    return [{"trace_id": f"{app}-{i}", "app": app, "query": f"question {i} <b>not bold</b>",
             "retrieved_docs": [{"id": "d1", "text": "a document"}, {"id": "d2", "text": "another"}],
             "gold_doc_ids": ["d2" if i % 2 else "d1"]} for i in range(n)]


def submit(http: httpx.Client, app: str, run: str, n: int = 3) -> str:
    return finished_job(http, {"traces": traces(app, n), "options": {"judge": "none", "run": run}})


@dataclass
class UiStack:
    open_url: str
    """An API with no keys (loopback): tenant `default`, no login."""
    keyed_url: str
    keys: dict[str, str]
    jobs: dict[str, list[str]]
    """tenant -> its job ids on the keyed API."""

    def api(self, tenant: str) -> httpx.Client:
        return httpx.Client(base_url=self.keyed_url, headers={"Authorization": f"Bearer {self.keys[tenant]}"},
                            timeout=30)


@pytest.fixture(scope="module")
def ui(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiStack]:
    with page_apis(redis_url, tmp_path_factory.mktemp("ui"), "ui") as apis:
        stack = UiStack(apis.open_url, apis.keyed_url, apis.keys, {})
        run = f"ui-{uuid.uuid4().hex[:8]}"
        with httpx.Client(base_url=apis.open_url, timeout=30) as http:
            for app in ("shop", "docs"):
                submit(http, app, run)
        for tenant in apis.keys:
            with stack.api(tenant) as http:
                stack.jobs[tenant] = [submit(http, "shop", f"{tenant}-a"), submit(http, "docs", f"{tenant}-b", 5)]
        yield stack


def acme(ui: UiStack) -> str:
    return next(t for t in ui.keys if t.startswith("acme"))


def globex(ui: UiStack) -> str:
    return next(t for t in ui.keys if t.startswith("globex"))


@contextlib.contextmanager
def logged_in(ui: UiStack, tenant: str) -> Iterator[httpx.Client]:
    """A cookie-keeping client that logged in through the review pages' form and landed back on `/`."""
    with httpx.Client(base_url=ui.keyed_url, timeout=30, follow_redirects=True) as http:
        first = http.get("/")
        assert first.url.path == "/review/login" and first.url.params["next"] == "/"
        home = http.post("/review/login", data={"api_key": ui.keys[tenant], "next": "/"})
        assert home.status_code == 200 and home.url.path == "/", home.text
        yield http


def links(page: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', page)


def test_landing_needs_the_session_then_lists_only_the_tenants_jobs(ui: UiStack) -> None:
    with logged_in(ui, acme(ui)) as http:
        home = http.get("/")
        jobs = http.get("/jobs")
        foreign = http.get(f"/jobs/{ui.jobs[globex(ui)][0]}")
    assert home.headers["content-security-policy"] == REVIEW_CSP == jobs.headers["content-security-policy"]
    for page in (home.text, jobs.text):
        assert all(job in page for job in ui.jobs[acme(ui)])
        assert not any(job in page for job in ui.jobs[globex(ui)])
    assert foreign.status_code == 404


def test_every_link_on_the_landing_page_answers_200(ui: UiStack) -> None:
    """Pages with the session cookie; the JSON API's links (/v1/...) with the tenant's key, as the API takes no
    cookie. Both the keyed API (after login) and the open one (no credentials at all)."""
    with logged_in(ui, acme(ui)) as http:
        home = http.get("/").text
        for href in links(home):
            api = href.startswith("/v1/")
            answer = http.get(href, headers={"Authorization": f"Bearer {ui.keys[acme(ui)]}"} if api else None)
            assert answer.status_code == 200, (href, answer.status_code)
    with httpx.Client(base_url=ui.open_url, timeout=30, follow_redirects=True) as http:
        home = http.get("/").text
        found = links(home)
        assert "/schema" in found and any(h.startswith("/jobs/") for h in found)
        assert any(h.startswith("/apps/") for h in found)
        for href in found:
            assert urlsplit(href).netloc == "", href            # nothing external
            assert http.get(href).status_code == 200, href


def test_bad_filters_name_the_parameter(ui: UiStack) -> None:
    with httpx.Client(base_url=ui.open_url, timeout=30) as http:
        for query, path in (("status=done", "query.status"), ("cursor=x", "query.cursor"), ("app=a%20b", "query.app"),
                            ("app=&run=a%20b&status=", "query.run")):
            answer = http.get(f"/jobs?{query}")
            assert answer.status_code == 400 and path in answer.text, (query, answer.text)


DOM_ROWS = """[...document.querySelectorAll('table.jobs tbody tr')].map(r => ({
  job_id: r.dataset.job, status: r.querySelector('[data-status]').dataset.status,
  total: +r.querySelector('[data-total]').dataset.total, failed: +r.querySelector('[data-failed]').dataset.failed,
  link: r.querySelector('a').getAttribute('href')}))"""


def api_rows(http: httpx.Client, **params: object) -> list[dict]:
    items = http.get("/v1/jobs", params=params).json()["items"]
    return [{"job_id": i["job_id"], "status": i["status"], "total": i["progress"]["total"],
             "failed": i["progress"]["failed"], "link": i["links"]["page"]} for i in items]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed: apt-get install chromium")
def test_pages_in_chromium_at_800_and_1400(ui: UiStack, tmp_path_factory: pytest.TempPathFactory) -> None:
    shots = tmp_path_factory.mktemp("ui-shots")
    browser = Browser(tmp_path_factory.mktemp("chromium"))
    try:
        with httpx.Client(base_url=ui.open_url, timeout=30) as http:
            for width in WIDTHS:
                browser.resize(width)
                for name, path, params in (("landing", "/", {"limit": 10}), ("jobs", "/jobs", {}),
                                           ("jobs-docs", "/jobs?app=docs&run=&status=", {"app": "docs"})):
                    browser.open(ui.open_url + path)
                    assert browser.eval(DOM_ROWS) == api_rows(http, **params), (name, width)
                    assert browser.overflow() == 0, (name, width)
                    browser.screenshot(shots / f"{name}-{width}.png")
                    assert (shots / f"{name}-{width}.png").stat().st_size > 0
                browser.open(ui.open_url + api_rows(http)[0]["link"])          # the job's report page
                assert browser.eval("document.querySelector('h1') !== null")
                assert browser.overflow() == 0, ("report", width)
                browser.screenshot(shots / f"report-{width}.png")
    finally:
        browser.close()


@pytest.mark.parametrize(("asked", "goes"), [
    ("/", "/"), ("/jobs", "/jobs"), ("/jobs?app=shop", "/jobs?app=shop"), ("/review/shop", "/review/shop"),
    ("//evil.example/", "/review"), ("/v1/jobs", "/review"), ("https://evil.example/jobs", "/review"),
    ("/jobsx", "/review"), ("/jobs/../v1", "/review"),
])
def test_login_returns_only_to_pages_of_this_site(asked: str, goes: str) -> None:
    assert safe_next(asked) == goes


def test_a_job_without_a_report_has_a_page_that_answers_200_and_reloads(redis_url: str, tmp_path: Path) -> None:
    """A queued job (no worker reads this queue): the API's report.html says 202, the UI's job page is the resource
    a browser asked for, so 200, reloading itself with the JSON's status word."""
    url, api = start_api(redis_url, tmp_path, {"RAGPULSE_QUEUE": f"ui-idle-{uuid.uuid4().hex[:8]}"})
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            accepted = http.post("/v1/batches", json={"traces": traces("shop", 2), "options": {"judge": "none"}})
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["job_id"]
            assert http.get(f"/v1/jobs/{job_id}/report.html").status_code == 202
            page = http.get(f"/jobs/{job_id}")
            assert page.status_code == 200
            status = http.get(f"/v1/jobs/{job_id}").json()["status"]
            assert f"data-status='{status}'" in page.text and "http-equiv=refresh" in page.text
    finally:
        api.stop()
