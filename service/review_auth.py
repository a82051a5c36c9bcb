"""How a browser acts for a tenant on the review pages: a session cookie obtained by posting an API key once.

The key travels only in the login form's POST body, is checked against the hashed keys exactly as the Bearer
header is (service.auth), and is exchanged for a random session id (ragpulse.store.review_sessions). The cookie is
HttpOnly, SameSite=Strict, Path=/ (the review pages and the web UI's pages of service.pages share it; the JSON
API authenticates by Bearer key only and never reads it), and Secure when the request came over https. Every form
carries the session's CSRF token, and a POST whose Origin (or Sec-Fetch-Site) names another site is refused before that.
With no API keys configured (loopback only) a session for tenant `default` is opened on first visit: no login, but
forms still carry a token, so another site cannot post labels through the reviewer's browser.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from litestar import Request
from litestar.datastructures import Cookie

from ragpulse.config import defaults
from ragpulse.exceptions import Forbidden, LoginRequired
from ragpulse.store.review_sessions import ReviewSession
from service.context import Services

COOKIE = "ragpulse_review"
"""Name of the session cookie."""
COOKIE_PATH = "/"
"""The cookie is sent to every page of the site: the review pages and the web UI (the JSON API ignores it)."""
LOGIN_HOME = "/review"
"""Where a login without a (safe) `next` goes."""
PAGE_PREFIXES = ("/review", "/jobs", "/compare", "/apps")
"""Pages a login may return to (with `/` itself): the session's pages, never the JSON API or another host."""


@dataclass(frozen=True)
class Review:
    """One review-page request: the session (its tenant and CSRF token) and the app's services."""

    session_id: str
    session: ReviewSession
    services: Services
    cookies: list[Cookie]
    """Set-Cookie to send: the session opened by this very request (open access), else none."""

    @property
    def tenant(self) -> str:
        return self.session.tenant

    def check_form(self, form: Mapping[str, Any]) -> None:
        """Forbidden unless the form repeats this session's CSRF token."""
        if not self.session.csrf_matches(form_text(form, "csrf")):
            raise Forbidden("the form's CSRF token is missing or not this session's; reload the page and submit again")


def review_resolver(services: Services) -> Callable[[Request], Review]:
    """The `review` dependency: the live session behind the cookie, or LoginRequired (a redirect to the form)."""
    settings, sessions = services.settings, services.review_sessions

    def resolve(request: Request) -> Review:
        if request.method == "POST":
            check_same_origin(request)
        session_id = request.cookies.get(COOKIE, "")
        session = sessions.find(session_id)
        if session is not None and session.tenant in settings.tenants \
                and session.opened_by_a_live_key(settings.api_key_digests):
            return Review(session_id, session, services, [])
        if not settings.open_access:
            query = request.url.query
            raise LoginRequired(f"{request.url.path}?{query}" if query else request.url.path)  # back to this page
        session_id, session = sessions.open(defaults.OPEN_TENANT)
        cookie = session_cookie(request, session_id, settings.review_session_ttl_seconds)
        return Review(session_id, session, services, [cookie])

    return resolve


def check_same_origin(request: Request) -> None:
    """Forbidden for a POST a browser says came from another site (Origin, Sec-Fetch-Site); a client that sends
    neither (curl, a test) is held to the CSRF token alone."""
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise Forbidden(f"a review form posted from {origin!r}, another origin; forms are accepted from this site only")
    if request.headers.get("sec-fetch-site", "same-origin") not in {"same-origin", "none"}:
        raise Forbidden("a review form posted from another site; forms are accepted from this site only")


def session_cookie(request: Request, session_id: str, ttl: int) -> Cookie:
    return Cookie(key=COOKIE, value=session_id, path=COOKIE_PATH, max_age=ttl, httponly=True, samesite="strict",
                  secure=request.url.scheme == "https")


def expired_cookie(request: Request) -> Cookie:
    return Cookie(key=COOKIE, value="", path=COOKIE_PATH, max_age=0, httponly=True, samesite="strict",
                  secure=request.url.scheme == "https")


def form_text(form: Mapping[str, Any], name: str) -> str:
    """One form field as text ('' when absent); a field sent twice counts as absent, never as a list."""
    value = form.get(name, "")
    return value if isinstance(value, str) else ""


def safe_next(path: str) -> str:
    """Where to go after login: a page of this site that uses the session, never another host (an open redirect)."""
    page = path == "/" or any(path == p or path.startswith((f"{p}/", f"{p}?")) for p in PAGE_PREFIXES)
    if page and path.isprintable() and "\\" not in path and ".." not in path and urlsplit(path).netloc == "":
        return path
    return LOGIN_HOME
