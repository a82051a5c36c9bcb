"""GET/POST /review/login and POST /review/logout: an API key, posted once, for a review-page session cookie."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, MediaType, Request, Response, get, post
from litestar.datastructures import Cookie
from litestar.enums import RequestEncodingType
from litestar.params import Body
from litestar.response import Redirect

from ragpulse.config import defaults
from ragpulse.config.api_keys import hash_key, tenant_for_key
from ragpulse.reporting.review_html import login_page
from service.context import Services
from service.jobs import PAGE_CSP
from service.review_auth import Review, check_same_origin, expired_cookie, form_text, safe_next, session_cookie

REVIEW_CSP = PAGE_CSP.replace("form-action 'none'", "form-action 'self'") + "; frame-ancestors 'none'"
"""The report page's policy, except that forms may post to this site (the label form) and no other site may frame
the pages (a framed form could be clicked through)."""

Form = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.URL_ENCODED)]
"""A review form's fields as posted (application/x-www-form-urlencoded)."""

MAX_KEY_CHARS = 1024
"""A longer `api_key` field is refused without hashing it."""


def html(page: str, status: int = 200, cookies: list[Cookie] | None = None,
         headers: dict[str, str] | None = None) -> Response[str]:
    """A review page: its CSP, never cached (it holds the session's CSRF token), no referrer to other sites."""
    return Response(page, status_code=status, media_type=MediaType.HTML, cookies=cookies or [], headers={
        "Content-Security-Policy": REVIEW_CSP, "Cache-Control": "no-store", "Referrer-Policy": "same-origin",
        "X-Content-Type-Options": "nosniff", **(headers or {})})


class ReviewLoginController(Controller):
    """Logging in and out of the review pages (see service.review_auth for the design)."""

    path = "/review"
    tags = ["review"]
    include_in_schema = False
    request_max_body_size = defaults.REVIEW_FORM_MAX_BYTES

    @get("/login", sync_to_thread=False)
    def form(self, services: Services, next: str = "/review") -> Response[str]:  # noqa: A002 - the query's name
        """The API-key form; with no keys configured there is nothing to log in to."""
        if services.settings.open_access:
            return Redirect(safe_next(next), status_code=303)
        return html(login_page(safe_next(next)))

    @post("/login", sync_to_thread=True, status_code=303)
    def login(self, request: Request, services: Services, data: Form) -> Response[str]:
        """A known key opens a session and returns to `next`; an unknown one shows the form again (401). A client
        address past its failed logins (LOGIN_FAILURES_ALLOWED a minute) is refused, right key or not, with 429 and
        Retry-After until its window ends: keys cannot be guessed at speed."""
        check_same_origin(request)
        settings, key = services.settings, form_text(data, "api_key").strip()
        next_path = safe_next(form_text(data, "next"))
        if settings.open_access:
            return Redirect(next_path, status_code=303)
        address = request.client.host if request.client is not None else "unknown"
        wait = services.review_sessions.login_throttled(address)
        if wait is not None:
            return html(login_page(next_path, f"Too many failed logins from this address; try again in {wait} s."),
                        status=429, headers={"Retry-After": str(wait)})
        tenant = tenant_for_key(key, settings.api_key_digests) if 0 < len(key) <= MAX_KEY_CHARS else None
        if tenant is None:
            services.review_sessions.login_failed(address)
            return html(login_page(next_path, "That API key is not known here."), status=401)
        session_id, _ = services.review_sessions.open(tenant, hash_key(key))
        return Redirect(next_path, status_code=303,
                        cookies=[session_cookie(request, session_id, settings.review_session_ttl_seconds)])

    @post("/logout", sync_to_thread=True, status_code=303)
    def logout(self, request: Request, review: Review, data: Form) -> Response[str]:
        """End the session (its token must come with the form) and forget the cookie."""
        review.check_form(data)
        review.services.review_sessions.close(review.session_id)
        return Redirect("/review/login", status_code=303, cookies=[expired_cookie(request)])
