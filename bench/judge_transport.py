"""What a judge call costs the worker's CPU, transport by transport, in one process against the loopback fake.

    .venv/bin/python bench/judge_transport.py                      # every transport at 32 and 128 in flight, ~3 min
    .venv/bin/python bench/judge_transport.py --transports chosen lean --concurrency 128 1024

tests.fake_anthropic.FakeAnthropic answers every call after 300 ms from a child process (so its CPU is not counted
here); this process judges distinct traces (bench.judge_throughput.make_traces) through AnthropicJudge.ajudge, the
worker's whole per-call path bar Redis, with C calls in flight, and reports the CPU it used per call (getrusage)
and the calls a second against the bound C / 0.3 s. The transports (issue 28, in the order the issue asked to try
them):

- `sdk`: the SDK's own path as before issue 28, `messages.with_raw_response.create` then `.parse()` (pydantic), httpx;
- `sdk-aiohttp`: the same, with the SDK's aiohttp transport (`DefaultAioHttpClient` as `http_client`);
- `sdk-raw`: the SDK's raw-response path, its body decoded with msgspec instead of `.parse()`;
- `sdk-aiohttp-raw`: both;
- `sdk-aiohttp-post`: the SDK's low-level `client.post` with the body encoded by msgspec (`content=`) and
  `cast_to=httpx2.Response` (no request transform, no pydantic), the aiohttp transport, msgspec decoding;
- `chosen`: ragpulse.judges.transport as shipped: aiohttp directly, msgspec both ways, the SDK's errors;
- `lean`: the reference: the same aiohttp exchange without the judge (no prompt, no validation): what the machine and
  the fake allow;
- `replay`: the judge with every answer replayed from memory after the same 300 ms (no HTTP at all): ragpulse's own
  cost per call (prompt, validation, the call loop), which every transport adds to.

Each figure is printed with the load average beside it: on a shared machine CPU per call is the steadier figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import anthropic  # noqa: E402
import httpx2  # noqa: E402
import msgspec  # noqa: E402

from bench.judge_throughput import make_traces  # noqa: E402
from ragpulse.judges import anthropic_judge  # noqa: E402
from ragpulse.judges.anthropic_judge import AnthropicJudge, AnthropicProvider  # noqa: E402
from ragpulse.judges.structured import Reply  # noqa: E402
from ragpulse.judges.transport import request_headers  # noqa: E402
from ragpulse.model.trace import Trace  # noqa: E402

LATENCY = 0.3
MODEL = "claude-sonnet-4-6"
FAKE = """
import sys
sys.path.insert(0, sys.argv[2])
from tests.fake_anthropic import FakeAnthropic
with FakeAnthropic(latency=float(sys.argv[1]), cache_min_tokens=10**9) as fake:
    print(fake.url, flush=True)
    sys.stdin.read()
"""
TRANSPORTS = ("sdk", "sdk-aiohttp", "sdk-raw", "sdk-aiohttp-raw", "sdk-aiohttp-post", "chosen", "lean", "replay")
_encoder, _decoder = msgspec.json.Encoder(), msgspec.json.Decoder()


class SdkProvider(AnthropicProvider):
    """The SDK's own path, as the adapter sent calls before issue 28 (`.parse()` into pydantic models)."""

    async def send(self, turns: list[dict[str, Any]]) -> Reply:
        raw = await self.client.messages.with_raw_response.create(**self._params(turns, True, self._system))
        message = await raw.parse()
        return anthropic_judge._reply(message.model_dump(mode="json"), raw.headers, self.model, self.task.name)


class SdkRawProvider(AnthropicProvider):
    """The SDK's raw-response path, the body decoded with msgspec."""

    async def send(self, turns: list[dict[str, Any]]) -> Reply:
        raw = await self.client.messages.with_raw_response.create(**self._params(turns, True, self._system))
        response = raw.http_response
        return anthropic_judge._reply(_decoder.decode(response.content), response.headers, self.model,
                                      self.task.name)


class SdkPostProvider(AnthropicProvider):
    """The SDK's low-level post: the body encoded by msgspec, the answer an httpx2.Response decoded by msgspec."""

    async def send(self, turns: list[dict[str, Any]]) -> Reply:
        response = await self.client.post("/v1/messages", content=_encoder.encode(self._params(turns, True,
                                                                                               self._system)),
                                          cast_to=httpx2.Response)
        return anthropic_judge._reply(_decoder.decode(response.content), response.headers, self.model,
                                      self.task.name)


class ReplayProvider(AnthropicProvider):
    """The shipped adapter, its answers recorded on a first pass and replayed after LATENCY on the measured one."""

    answers: dict[str, Reply] = {}

    async def send(self, turns: list[dict[str, Any]]) -> Reply:
        key = json.dumps(turns)
        if key in self.answers:
            await asyncio.sleep(LATENCY)
            return self.answers[key]
        self.answers[key] = await super().send(turns)
        return self.answers[key]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def make_judge(transport: str, url: str) -> AnthropicJudge:
    http_client = anthropic.DefaultAioHttpClient() if "aiohttp" in transport else None
    client = anthropic.AsyncAnthropic(api_key="bench", base_url=url, max_retries=0, timeout=60,
                                      http_client=http_client)
    judge = AnthropicJudge(client, MODEL, 4096)
    adapter = {"sdk": SdkProvider, "sdk-aiohttp": SdkProvider, "sdk-raw": SdkRawProvider,
               "sdk-aiohttp-raw": SdkRawProvider, "sdk-aiohttp-post": SdkPostProvider, "replay": ReplayProvider}
    if transport in adapter:
        judge.provider.__class__ = adapter[transport]
    return judge


async def lean_calls(url: str, bodies: list[bytes], concurrency: int) -> None:
    """The reference: the same posts through one aiohttp session, answers decoded, nothing else."""
    headers = request_headers(anthropic.AsyncAnthropic(api_key="bench", base_url=url))
    bound = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def one(body: bytes) -> None:
            async with bound, session.post(f"{url}/v1/messages", data=body, headers=headers) as response:
                _decoder.decode(await response.read())

        await asyncio.gather(*(one(body) for body in bodies))


async def measure(transport: str, url: str, concurrency: int, calls: int) -> tuple[float, float]:
    """Calls a second and CPU ms per call over `calls` calls, after a first wave that opens the connections."""
    traces = [msgspec.convert(t, Trace) for t in make_traces(calls + concurrency, concurrency, f"t{concurrency}")]
    if transport == "lean":
        template = make_judge("chosen", url).provider
        bodies = [_encoder.encode(template._params(template.first_turns(t), True, template._system)) for t in traces]
        await lean_calls(url, bodies[:concurrency], concurrency)
        started, cpu = time.monotonic(), cpu_seconds()
        await lean_calls(url, bodies[concurrency:], concurrency)
    else:
        judge = make_judge(transport, url)
        bound = asyncio.Semaphore(concurrency)

        async def one(trace: Trace) -> None:
            async with bound:
                await judge.ajudge(trace)

        await asyncio.gather(*(one(t) for t in traces[:concurrency]))
        if transport == "replay":
            await asyncio.gather(*(one(t) for t in traces[concurrency:]))   # the pass that records the answers
        started, cpu = time.monotonic(), cpu_seconds()
        await asyncio.gather(*(one(t) for t in traces[concurrency:]))
    wall, used = time.monotonic() - started, cpu_seconds() - cpu
    if transport != "lean":
        await judge.aclose()
    return calls / wall, used / calls * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transports", nargs="+", default=list(TRANSPORTS), choices=TRANSPORTS)
    parser.add_argument("--concurrency", nargs="+", type=int, default=[32, 128])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of calls at the bound per figure")
    args = parser.parse_args()
    fake = subprocess.Popen([sys.executable, "-c", FAKE, str(LATENCY), str(ROOT)], stdout=subprocess.PIPE,
                            stdin=subprocess.PIPE, text=True)
    url = fake.stdout.readline().strip()
    print(f"judge transports, fake latency {LATENCY * 1000:.0f} ms in a child process; load average "
          f"{os.getloadavg()[0]:.2f} at start")
    print("| transport | in flight | calls/s | of the bound | worker CPU per call | load average |")
    print("|---|---|---|---|---|---|")
    try:
        for concurrency in args.concurrency:
            calls = max(200, int(concurrency / LATENCY * args.seconds))
            for transport in args.transports:
                rate, cpu_ms = asyncio.run(measure(transport, url, concurrency, calls))
                print(f"| {transport} | {concurrency} | {rate:.1f} | {rate / (concurrency / LATENCY):.3f} | "
                      f"{cpu_ms:.2f} ms | {os.getloadavg()[0]:.2f} |", flush=True)
    finally:
        fake.stdin.close()
        fake.wait()


if __name__ == "__main__":
    main()


async def reference_calls(url: str, concurrency: int, calls: int) -> None:
    """The lean client's calls alone (bench/judge_concurrency.py runs them in a child process as its reference)."""
    template = make_judge("chosen", url).provider
    traces = [msgspec.convert(t, Trace) for t in make_traces(calls, concurrency, f"r{concurrency}")]
    await lean_calls(url, [_encoder.encode(template._params(template.first_turns(t), True, template._system))
                           for t in traces], concurrency)
