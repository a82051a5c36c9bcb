"""The judge providers' HTTP transport: JSON posts over one aiohttp session, failures raised as the provider's SDK
raises them.

Why not the SDK's own request path (measured in bench/README.md, issue 28): per call it deep-copies and transforms
the whole request (the tool schema and the prompt are most of it), builds an httpx request through its middleware,
scans its connection pool and parses the answer into pydantic models: 1.5-3 ms of worker CPU a call, which capped
one worker near 150 calls/s. Here a call is one msgspec encode, one aiohttp exchange on a kept-alive connection and
one msgspec decode (about 0.5 ms all told).

What stays the SDK's:
- the client's configuration: base URL (with the SDK's own environment variables), API key or token, default headers
  (`anthropic-version`, user agent, any `default_headers` given), timeout, proxies from the environment;
- its errors: a non-2xx answer becomes the exception the SDK raises for that answer (its status classes, `body`,
  `response.headers`), a timeout its APITimeoutError, a connection failure its APIConnectionError, so the adapters
  classify failures, read `retry-after` and fall back on a refused feature exactly as before;
- the whole request path, for a client whose credentials add headers per request (`custom_auth`: a token provider
  that refreshes): those go through `client.post` unchanged.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx2
import msgspec
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

_encoder = msgspec.json.Encoder()
AUTH_HEADERS = frozenset({"x-api-key", "authorization"})
"""Request headers that carry credentials (lower case)."""


@dataclass(frozen=True)
class Answer:
    """A 2xx answer: its body as sent, and its headers (case-insensitive)."""

    content: bytes
    headers: Mapping[str, str]


class JsonTransport:
    """Posts JSON bodies for one SDK client (anthropic.AsyncAnthropic, openai.AsyncOpenAI); `errors` is the SDK's
    module, whose APITimeoutError and APIConnectionError it raises. Build and use it inside one event loop."""

    def __init__(self, client: Any, errors: types.ModuleType) -> None:
        self.client, self.errors = client, errors
        self.headers = request_headers(client)
        """What the SDK sends with every request: its credentials and default headers, lower case as httpx sends
        them."""
        self.through_sdk = client.custom_auth is not None
        """True when the client's credentials add headers per request: every call then goes through the SDK."""
        self._base = str(client.base_url).rstrip("/")
        self._session: aiohttp.ClientSession | None = None
        self._proxy: tuple[URL | None, aiohttp.BasicAuth | None] = (None, None)

    @property
    def has_credentials(self) -> bool:
        """Whether a request would carry credentials (a key, a token, or the SDK's own per-request auth)."""
        return self.through_sdk or not AUTH_HEADERS.isdisjoint(self.headers)

    async def post(self, path: str, body: dict[str, Any]) -> Answer:
        """POST `body` as JSON to `path` under the base URL; the 2xx answer, or the SDK's exception."""
        if self.through_sdk:
            response = await self.client.post(path, body=body, cast_to=httpx2.Response)
            return Answer(response.content, response.headers)
        url = self._base + path
        try:
            async with self._open().post(url, data=_encoder.encode(body), headers=self.headers, proxy=self._proxy[0],
                                         proxy_auth=self._proxy[1]) as response:
                content = await response.read()
        except TimeoutError:
            raise self.errors.APITimeoutError(request=httpx2.Request("POST", url)) from None
        except aiohttp.ClientError as exc:
            raise self.errors.APIConnectionError(message=f"{type(exc).__name__}: {exc}",
                                                 request=httpx2.Request("POST", url)) from exc
        if not 200 <= response.status < 300:
            raise self.client._make_status_error_from_response(httpx2.Response(  # noqa: SLF001 - the SDK's mapping
                response.status, headers=list(response.headers.items()), content=content,
                request=httpx2.Request("POST", url)))
        return Answer(content, response.headers)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            # No pool limit: the callers bound the calls in flight (RAGPULSE_JUDGE_CONCURRENCY per chunk run), and a
            # lower limit would only queue calls here. Certificates as the SDK verifies them (certifi, SSL_CERT_*).
            # The proxy from the environment is read once here: aiohttp's trust_env reads it, and ~/.netrc, in a
            # thread on every request. No cookies: the APIs set none the calls need.
            tls = httpx2.create_ssl_context() if self._base.startswith("https:") else None
            with contextlib.suppress(LookupError):
                self._proxy = get_env_proxy_for_url(URL(self._base))
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=tls if tls is not None else True),
                timeout=_timeout(self.client.timeout), cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def aclose(self) -> None:
        """Close the session (its connections) and the SDK client."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self.client.close()


def request_headers(client: Any) -> dict[str, str]:
    """The SDK client's credentials, then its default headers over them (a header the SDK omits is left out): what
    its request path puts on every request before per-request options."""
    headers = {name.lower(): value for name, value in client.auth_headers.items()}
    for name, value in client.default_headers.items():
        if isinstance(value, str):
            headers[name.lower()] = value
        else:
            headers.pop(name.lower(), None)
    return headers


def _timeout(timeout: Any) -> aiohttp.ClientTimeout:
    """The SDK client's timeout as aiohttp's: httpx applies a float to connecting and to each read (no total)."""
    if isinstance(timeout, httpx2.Timeout):
        return aiohttp.ClientTimeout(total=None, connect=timeout.pool, sock_connect=timeout.connect,
                                     sock_read=timeout.read)
    return aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
