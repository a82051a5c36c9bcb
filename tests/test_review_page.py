"""The review page end to end: real Redis, the API and a worker judging a batch, browsers logging in and labelling.

HTTP clients (with a cookie jar, as a browser has) check the authentication design, CSRF, tenant isolation and that
the judge's verdicts stay hidden until the reviewer answered; headless chromium labels a trace by keyboard alone
and is measured at 800 and 1,400 px.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ragpulse.config import keys
from ragpulse.store.review_sessions import ReviewSessions
from tests.support import start_tags, start_api, start_worker, wait_for_job

pytestmark = pytest.mark.integration

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
APP = "support"
HOSTILE = "<script>alert('x')</script><img src=https://evil.example/x.png onerror=alert(1)>"
WARRANTY = {"id": "warranty", "text": "The warranty lasts two years from the date of purchase."}
SHIPPING = {"id": "shipping", "text": f"Orders ship within three working days. {HOSTILE}"}
SAVE = "Save label and show the judge's call"
"""The label form's submit button."""
LONG_WORD = "x" * 400
"""An unbroken token longer than any window is wide: the page must wrap it, not scroll sideways."""
TRACES = [
    {"trace_id": f"t{n}", "app": APP, "query": f"How long is the warranty? {HOSTILE}",
     "answer": f"The warranty lasts {years} years. Shipping is free. {HOSTILE} {LONG_WORD}",
     "retrieved_docs": [WARRANTY, SHIPPING]} for n, years in enumerate(["two", "five", "three", "two"])]


@dataclass
class ReviewStack:
    url: str
    keys: dict[str, str]
    """tenant -> API key."""
    job_id: str

    def api(self, tenant: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.keys[tenant]}"}, timeout=30)


@pytest.fixture(scope="module")
def review(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReviewStack]:
    """An API with two tenants and a worker that puts every judged trace in the review sample; acme's batch judged."""
    run = uuid.uuid4().hex[:8]
    tenant_keys = {f"acme-{run}": f"key-acme-{run}", f"globex-{run}": f"key-globex-{run}"}
    env = {"RAGPULSE_QUEUE": f"review-{run}", "RAGPULSE_REVIEW_SAMPLE_RATE": "1",
           "RAGPULSE_API_KEYS": ",".join(f"{t}:{k}" for t, k in tenant_keys.items())}
    tmp = tmp_path_factory.mktemp("review")
    url, api = start_api(redis_url, tmp, env)
    worker = start_worker(redis_url, tmp, env, name="review")
    try:
        stack = ReviewStack(url, tenant_keys, "")
        with stack.api(acme(stack)) as http:
            accepted = http.post("/v1/batches", json={"traces": TRACES, "options": {"judge": "local"}})
            assert accepted.status_code == 202, accepted.text
            stack.job_id = accepted.json()["job_id"]
            assert wait_for_job(http, stack.job_id)["status"] == "finished"
        yield stack
    finally:
        api.stop()
        worker.stop()


def acme(stack: ReviewStack) -> str:
    return next(t for t in stack.keys if t.startswith("acme"))


def globex(stack: ReviewStack) -> str:
    return next(t for t in stack.keys if t.startswith("globex"))


@contextlib.contextmanager
def logged_in(stack: ReviewStack, tenant: str) -> Iterator[httpx.Client]:
    """A cookie-keeping client that logged in through the form."""
    with httpx.Client(base_url=stack.url, timeout=30, follow_redirects=True) as browser:
        page = browser.post("/review/login", data={"api_key": stack.keys[tenant], "next": f"/review/{APP}"})
        assert page.status_code == 200 and str(page.url).endswith(f"/review/{APP}"), page.text
        yield browser


def form_fields(page: str) -> dict[str, str]:
    """The hidden fields of the label form (the CSRF token, the trace and job ids)."""
    return dict(re.findall(r'<input type=hidden name=(\w+) value="([^"]*)"', page))


def label_form(page: str, **answers: str) -> dict[str, str]:
    return {**form_fields(page), "hallucinated": "yes", "abstained": "no", "reviewer": "ann", **answers}


def test_login_exchanges_the_key_for_a_session_cookie_and_no_url_holds_it(review: ReviewStack) -> None:
    key = review.keys[acme(review)]
    with httpx.Client(base_url=review.url, timeout=30) as browser:
        first = browser.get(f"/review/{APP}")
        assert first.status_code == 303 and first.headers["location"] == f"/review/login?next=%2Freview%2F{APP}"
        refused = browser.post("/review/login", data={"api_key": "not-a-key", "next": f"/review/{APP}"})
        assert refused.status_code == 401 and "not known" in refused.text and "set-cookie" not in refused.headers
        assert browser.get(f"/review/{APP}").status_code == 303                      # still not logged in
        done = browser.post("/review/login", data={"api_key": key, "next": f"/review/{APP}"})
        assert done.status_code == 303 and done.headers["location"] == f"/review/{APP}"
        cookie = done.headers["set-cookie"]
        assert re.match(r"ragpulse_review=[A-Za-z0-9_-]{43};", cookie) and key not in cookie
        assert {"HttpOnly", "Path=/", "SameSite=strict"} <= {p.strip() for p in cookie.split(";")}
        assert "Secure" not in cookie                                                # plain http on loopback
        page = browser.get(f"/review/{APP}")
        assert page.status_code == 200 and f"/review/{APP}" == page.url.path
        assert all(key not in str(r.url) and key not in r.headers.get("location", "") for r in (first, done, page))
        assert key not in page.text and "Log out" in page.text
        assert "form-action 'self'" in page.headers["content-security-policy"]
        assert page.headers["cache-control"] == "no-store"
        csrf = form_fields(page.text)["csrf"]
        assert browser.post("/review/logout", data={"csrf": csrf}).status_code == 303
        assert browser.get(f"/review/{APP}").status_code == 303                      # the cookie opens nothing now
    behind_tls = httpx.post(f"{review.url}/review/login", data={"api_key": key}, headers={"X-Forwarded-Proto": "https"})
    assert "Secure" in behind_tls.headers["set-cookie"]                             # https at the proxy: Secure
    huge = httpx.post(f"{review.url}/review/login", data={"api_key": "k" * 100_000})
    assert huge.status_code == 413                                                  # forms are small


def test_a_post_without_the_sessions_csrf_token_or_from_another_site_is_refused(review: ReviewStack) -> None:
    with logged_in(review, acme(review)) as browser, review.api(acme(review)) as api:
        page = browser.get(f"/review/{APP}").text
        fields = label_form(page, reviewer="mallory")
        trace_id, token = fields["trace_id"], fields.pop("csrf")
        assert browser.post(f"/review/{APP}", data=fields).status_code == 403
        assert browser.post(f"/review/{APP}", data={**fields, "csrf": "x" * 43}).status_code == 403
        other_site = browser.post(f"/review/{APP}", data={**fields, "csrf": token},
                                  headers={"Origin": "https://evil.example"})
        assert other_site.status_code == 403
        stored = api.get("/v1/labels", params={"trace_id": trace_id, "job_id": review.job_id}).json()
        assert [lab for lab in stored["labels"] if lab["reviewer"] == "mallory"] == []


def test_another_tenants_session_neither_sees_nor_labels_these_traces(review: ReviewStack) -> None:
    with logged_in(review, acme(review)) as ours, logged_in(review, globex(review)) as theirs:
        fields = label_form(ours.get(f"/review/{APP}").text, reviewer="eve")
        trace_id = fields["trace_id"]
        empty = theirs.get(f"/review/{APP}")
        assert empty.status_code == 200 and "Nothing to review" in empty.text
        shown = empty.text.replace(form_fields(empty.text)["csrf"], "")        # a random token may hold "t1"
        assert "trace_id" not in form_fields(empty.text) and "warranty" not in shown
        assert not re.search(rf"\b{re.escape(trace_id)}\b", shown)
        peek = theirs.get(f"/review/{APP}/result", params={"trace_id": trace_id, "job_id": review.job_id})
        assert peek.status_code == 404
        their_token = form_fields(theirs.get("/review").text)["csrf"]
        forged = theirs.post(f"/review/{APP}", data={**fields, "csrf": their_token})
        assert forged.status_code == 404 and "warranty" not in forged.text
    with review.api(acme(review)) as api:
        labels = api.get("/v1/labels", params={"trace_id": trace_id, "job_id": review.job_id}).json()["labels"]
        assert [lab for lab in labels if lab["reviewer"] == "eve"] == []


def test_the_verdicts_appear_only_after_the_label_is_stored(review: ReviewStack) -> None:
    with logged_in(review, acme(review)) as browser, review.api(acme(review)) as api:
        page = browser.get(f"/review/{APP}")
        fields = label_form(page.text, reviewer="judy", note="second look <b>bold</b>")
        queue = api.get(f"/v1/apps/{APP}/review", params={"n": 50}).json()["items"]
        judge = next(i["judge"] for i in queue if i["trace_id"] == fields["trace_id"])
        assert "data-judge" not in page.text and judge["prompt_version"] not in page.text
        assert all(c.get("reason") is None or c["reason"] not in page.text for c in judge["claims"])
        early = browser.get(f"/review/{APP}/result", params={"trace_id": fields["trace_id"], "job_id": review.job_id})
        assert early.url.path == f"/review/{APP}" and "data-judge" not in early.text  # no label yet: no verdicts
        incomplete = browser.post(f"/review/{APP}", data={k: v for k, v in fields.items() if k != "hallucinated"})
        assert incomplete.status_code == 422 and "hallucinated" in incomplete.text
        assert "data-judge" not in incomplete.text and "second look &lt;b&gt;bold&lt;/b&gt;" in incomplete.text
        result = browser.post(f"/review/{APP}", data={**fields, "claim-0": "supported"})
        assert result.status_code == 200 and result.url.path == f"/review/{APP}/result"
        assert judge["prompt_version"] in result.text and "Next trace" in result.text
        calls = re.findall(r"<td data-judge-call>(\w+)", result.text)
        assert calls[:2] == [_yes(judge["hallucinated"]), _yes(judge["abstained"])]
        assert calls[2:] == [c["verdict"] for c in judge["claims"]]
        stored = api.get("/v1/labels", params={"trace_id": fields["trace_id"], "job_id": review.job_id}).json()
        label = next(lab for lab in stored["labels"] if lab["reviewer"] == "judy")
        assert (label["hallucinated"], label["abstained"], label["note"]) == (True, False, "second look <b>bold</b>")
        assert label["claims"] == [{"index": 0, "verdict": "supported"}] and label["app"] == APP
        following = browser.get(f"/review/{APP}")
        assert form_fields(following.text).get("trace_id") != fields["trace_id"]  # judy is served another trace
        assert 'value="judy"' in following.text                                     # her name is remembered


def test_trace_text_is_shown_as_text_never_as_markup(review: ReviewStack) -> None:
    with logged_in(review, acme(review)) as browser:
        page = browser.get(f"/review/{APP}").text
    tags = _tags(page)
    assert {"script", "img", "iframe", "object"}.isdisjoint(tag for tag, _ in tags)
    assert not [attrs for _, attrs in tags if any(k.startswith("on") or (v and "//" in v) for k, v in attrs)]
    assert page.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") >= 3   # query, answer, document


def test_open_access_needs_no_login_but_still_a_token(stack, client: httpx.Client) -> None:  # noqa: ANN001
    """The session stack serves without keys (loopback): a session is opened on first visit."""
    assert client.get("/review/login").headers["location"] == "/review"
    with httpx.Client(base_url=stack.url, timeout=30) as browser:
        page = browser.get(f"/review/empty-{uuid.uuid4().hex[:6]}")
        assert page.status_code == 200 and "Nothing to review" in page.text and "Log out" not in page.text
        assert "HttpOnly" in page.headers["set-cookie"]
        assert browser.post(f"/review/{APP}", data={"hallucinated": "yes"}).status_code == 403


def test_sessions_expire_and_a_tenant_holds_at_most_its_cap(redis_client) -> None:  # noqa: ANN001
    tenant = f"cap-{uuid.uuid4().hex[:8]}"
    sessions = ReviewSessions(redis_client, ttl=600, cap=3)
    opened = [sessions.open(tenant)[0] for _ in range(4)]
    assert sessions.find(opened[0]) is None and all(sessions.find(s) for s in opened[1:])
    assert redis_client.zcard(keys.review_sessions(tenant)) == 3
    assert 0 < redis_client.ttl(keys.review_sessions(tenant)) <= 600
    stored = [keys.review_session(hashlib.sha256(s.encode()).hexdigest()) for s in opened[1:]]
    assert all(0 < redis_client.ttl(k) <= 600 for k in stored)
    assert not list(redis_client.scan_iter(f"*{opened[1]}*"))                      # only digests are stored
    sessions.close(opened[1])
    assert sessions.find(opened[1]) is None and redis_client.zcard(keys.review_sessions(tenant)) == 2


def test_replacing_a_leaked_key_ends_the_review_sessions_it_opened(review: ReviewStack, redis_url: str,
                                                                  tmp_path: Path) -> None:
    """A session used to check only that its tenant still existed: cookies opened with a leaked key kept working
    for their 8 hours after the key was replaced by a new one for the same tenant."""
    tenant, old = acme(review), review.keys[acme(review)]
    with logged_in(review, tenant) as browser:
        cookie = browser.cookies.get("ragpulse_review")
    env = {"RAGPULSE_QUEUE": f"rotated-{uuid.uuid4().hex[:8]}"}
    rotated, rotated_api = start_api(redis_url, tmp_path, {**env, "RAGPULSE_API_KEYS": f"{tenant}:new-{old}"})
    both, both_api = start_api(redis_url, tmp_path, {**env, "RAGPULSE_API_KEYS": f"{tenant}:new-{old},{tenant}:{old}"})
    try:
        for url, opens in ((rotated, False), (both, True)):
            page = httpx.get(f"{url}/review/{APP}", cookies={"ragpulse_review": cookie}, timeout=30)
            assert (page.status_code == 200) is opens, (url, page.status_code)
            if not opens:
                assert page.status_code == 303 and page.headers["location"].startswith("/review/login")
    finally:
        rotated_api.stop()
        both_api.stop()


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed: apt-get install chromium")
def test_a_reviewer_labels_a_trace_by_keyboard_in_chromium(review: ReviewStack, tmp_path: Path) -> None:
    from tests.browser import Browser

    ARTIFACTS.mkdir(exist_ok=True)
    browser = Browser(tmp_path / "profile")
    try:
        browser.resize(800)
        browser.open(f"{review.url}/review/{APP}")
        assert browser.eval("location.pathname") == "/review/login"
        browser.wait_for("document.activeElement && document.activeElement.id === 'api_key'")  # autofocus
        browser.type(review.keys[acme(review)])                           # the key field has the focus
        browser.press("Enter", loads=True)
        assert browser.eval("location.pathname + location.search") == f"/review/{APP}"
        assert browser.eval("document.cookie") == ""                      # HttpOnly: no script can read it
        trace_id = browser.eval("document.querySelector('.trace').dataset.traceId")
        for width in (800, 1400):
            browser.resize(width)
            assert browser.overflow() == 0, f"horizontal overflow at {width} px"
            browser.screenshot(ARTIFACTS / f"review_page_{width}.png")
        claims = browser.eval("document.querySelectorAll('.claims li').length")
        expected = ["submit:Log out", *(f"radio:claim-{i}" for i in range(claims)), "radio:hallucinated",
                    "radio:abstained", "textarea:note", "text:reviewer", f"submit:{SAVE}"]
        assert [_focus_after_tab(browser) for _ in expected] == expected   # the tab order reads the page in order
        assert browser.eval("getComputedStyle(document.activeElement).outlineStyle") == "solid"  # focus visible
        browser.open(f"{review.url}/review/{APP}")                         # from the top again, by keyboard only
        _tab_to(browser, "radio:hallucinated")
        browser.press(" ")                                                 # yes
        _tab_to(browser, "radio:abstained")
        browser.press(" ")
        browser.press("ArrowRight")                                        # no
        _tab_to(browser, "text:reviewer")
        browser.type("kim")
        _tab_to(browser, f"submit:{SAVE}")
        browser.press("Enter", loads=True)
        assert browser.eval("location.pathname") == f"/review/{APP}/result"
        assert browser.eval("document.querySelectorAll('[data-judge-call]').length") >= 2
        for width in (800, 1400):
            browser.resize(width)
            assert browser.overflow() == 0, f"horizontal overflow of the result at {width} px"
            browser.screenshot(ARTIFACTS / f"review_result_{width}.png")
    finally:
        browser.close()
    with review.api(acme(review)) as api:
        labels = api.get("/v1/labels", params={"trace_id": trace_id, "job_id": review.job_id}).json()["labels"]
    kim = next(lab for lab in labels if lab["reviewer"] == "kim")
    assert (kim["hallucinated"], kim["abstained"]) == (True, False)
    assert (ARTIFACTS / "review_page_800.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _focus_after_tab(browser) -> str:  # noqa: ANN001
    browser.press("Tab")
    return browser.eval("(e => `${e.type || e.tagName.toLowerCase()}:${e.name || e.textContent.trim()}`)"
                        "(document.activeElement)")


def _tab_to(browser, target: str, most: int = 30) -> None:  # noqa: ANN001
    for _ in range(most):
        if _focus_after_tab(browser) == target:
            return
    raise AssertionError(f"Tab never reached {target}")


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    found = start_tags(page)
    assert len(found) > 20
    return found


def test_failed_logins_are_throttled_per_client_address(review: ReviewStack, redis_client) -> None:  # noqa: ANN001
    from ragpulse.config import keys  # noqa: PLC0415
    from ragpulse.store.review_sessions import LOGIN_FAILURE_WINDOW_SECONDS, LOGIN_FAILURES_ALLOWED  # noqa: PLC0415

    counter = keys.review_login_failures("127.0.0.1")
    redis_client.delete(counter)
    try:
        with httpx.Client(base_url=review.url, timeout=30) as browser:
            for _ in range(LOGIN_FAILURES_ALLOWED):
                assert browser.post("/review/login", data={"api_key": "guess"}).status_code == 401
            for key in ("guess", review.keys[acme(review)]):   # past the allowance even the right key waits
                refused = browser.post("/review/login", data={"api_key": key})
                assert refused.status_code == 429 and "set-cookie" not in refused.headers
                assert 0 < int(refused.headers["retry-after"]) <= LOGIN_FAILURE_WINDOW_SECONDS
                assert "Too many failed logins" in refused.text
            assert 0 < redis_client.ttl(counter) <= LOGIN_FAILURE_WINDOW_SECONDS
            redis_client.delete(counter)                       # the window over: the key logs in again
            assert browser.post("/review/login", data={"api_key": review.keys[acme(review)]}).status_code == 303
    finally:
        redis_client.delete(counter)
