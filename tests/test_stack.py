"""End to end: `ragpulse up` as a subprocess, `ragpulse eval examples/...` against it, clean shutdown; what `up`
does when it cannot start, and that nothing it started outlives it."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
import redis

from ragpulse.exceptions import ConfigError
from ragpulse.ops.data_dir import DataDirLock
from ragpulse.ops.lifetime import alive
from ragpulse.ops.redis_server import (
    DIR_PREFIX, OWNER_FILE, PrivateRedis, free_port, redis_server_binary, sweep_stale,
)
from ragpulse.ops.stack import RQ_LOG_LEVEL, Child, Stack
from tests.support import ROOT, child_env, children_of, spawn, wait_for_line

pytestmark = pytest.mark.integration
EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"
UP = [sys.executable, "-m", "ragpulse.ops.cli", "up"]


def walkthrough() -> list[str]:
    """The commands of the README's walk-through, comments stripped."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Walk-through.*?```bash\n(.*?)```", text, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def venv_ready() -> bool:
    """`./scripts/run` will not reinstall: .venv is set up and its install is newer than pyproject.toml."""
    stamps = [ROOT / ".venv" / ".ragpulse-installed", ROOT / ".venv" / ".ragpulse-installed-test"]
    newest = max((s.stat().st_mtime for s in stamps if s.exists()), default=0)
    return (ROOT / ".venv" / "bin" / "ragpulse").exists() and newest >= (ROOT / "pyproject.toml").stat().st_mtime


def user_env(tmp: Path, **extra: str) -> dict[str, str]:
    """A new user's environment: no REDIS_URL (so `up` starts its own Redis), no judge key, temp files in `tmp`, and
    its data directory ($XDG_DATA_HOME/ragpulse) in `tmp` too."""
    env = child_env("unused", {"TMPDIR": str(tmp), "XDG_DATA_HOME": str(tmp / "xdg-data"), **extra})
    env.pop("REDIS_URL")
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def redis_child(pid: int) -> int:
    [found] = [kid for kid in children_of(pid) if b"redis-server" in Path(f"/proc/{kid}/cmdline").read_bytes()]
    return found


def wait_gone(pids: set[int], timeout: float = 15.0) -> set[int]:
    """The pids still alive after waiting up to `timeout` for all of them to exit."""
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return {pid for pid in pids if alive(pid)}


@pytest.fixture
def readme_stack(tmp_path: Path):
    """The README's first command, `./scripts/run &`, on a free port (RAGPULSE_PORT), waited for as it says."""
    if not venv_ready():
        pytest.skip("needs the .venv that ./scripts/test sets up")
    commands = walkthrough()
    assert commands[0] == "./scripts/run &", commands
    port = free_port()
    env = user_env(tmp_path, RAGPULSE_PORT=str(port))
    proc = spawn(shlex.split(commands[0].rstrip("&")), env, tmp_path / "up.log")
    wait_for_line(proc, "ragpulse is up")
    yield f"http://127.0.0.1:{port}", proc, commands, env
    proc.stop()


def test_readme_walkthrough_from_is_up_to_eval_and_clean_stop(readme_stack) -> None:
    url, up, commands, env = readme_stack
    # "is up" means ready: the API answers and reaches Redis, and a worker is registered, at once.
    assert httpx.get(f"{url}/readyz").status_code == 200
    workers = re.search(r"^ragpulse_workers (\S+)$", httpx.get(f"{url}/metrics").text, re.M)
    assert workers and float(workers.group(1)) >= 1

    # The README's second command, literally: its --server default follows RAGPULSE_PORT.
    assert commands[1] == ".venv/bin/ragpulse eval examples/acme_support_traces.jsonl"
    result = subprocess.run(commands[1], shell=True, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr
    report = result.stdout
    assert "recall@5" in report and "ndcg@10" in report and "BY QUESTION TYPE" in report and "BY SOURCE" in report
    # No judge is configured on a new machine: generation is not judged, and no rate is shown as if measured.
    assert "GENERATION: not judged" in report and "ANTHROPIC_API_KEY" in report
    for generation_metric in ["faithfulness", "hallucination_rate", "answer_relevance", "correctness"]:
        assert not re.search(rf"^  {generation_metric} +\d\.\d{{3}} +\[", report, re.M), generation_metric
    assert "SECURITY" in report and "DIAGNOSTIC MATRIX" in report and "primary issue:" in report
    assert "65/65 finished" in result.stderr                       # the progress bar reached the end
    job_id = re.search(r"job ([0-9a-f]{32})", report).group(1)
    results = httpx.get(f"{url}/v1/jobs/{job_id}/results", params={"limit": 1000}).json()["items"]
    assert len(results) == 65 and {r["status"] for r in results} == {"ok"}

    output = up.output()
    assert not re.search(r" rq\.\S+ INFO ", output), output     # RQ's per-job lines stay out of the terminal
    assert "Ctrl-C" not in output                                  # stdin is no terminal: nobody can press it

    # The third command, `kill %1`, sends SIGTERM to the job.
    assert commands[2] == "kill %1"
    kids = children_of(up.process.pid)
    assert len(kids) >= 4                                          # redis, api, two workers
    up.process.send_signal(signal.SIGTERM)
    assert up.process.wait(30) == 0
    assert not wait_gone(kids), up.output()
    # `./scripts/run` keeps its data (and says where): in the default data directory, unlocked once it stopped.
    data = Path(env["XDG_DATA_HOME"]) / "ragpulse"
    assert f"data in {data}" in output and list((data / "redis").glob("appendonly*"))
    assert DataDirLock(data, wait=0).acquire({"pid": os.getpid()}).release() is None


def test_up_fails_fast_when_the_port_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([*UP, "--port", str(port), "--workers", "1", "--ephemeral"], capture_output=True,
                                text=True,
                                timeout=60, cwd=ROOT, env=user_env(tmp_path), stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "is up" not in result.stdout + result.stderr
    assert not list(tmp_path.glob(f"{DIR_PREFIX}*"))               # it started nothing, not even Redis


def test_up_fails_when_the_api_exits_before_it_is_ready(tmp_path: Path) -> None:
    # An API that cannot start (here: a `service` package that exits at once, found first from the working
    # directory) must fail `up`, not be announced and then restarted.
    fake = tmp_path / "service"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("import sys\nsys.exit('ragpulse api: cannot start')\n")
    env = user_env(tmp_path)
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{ROOT}"
    proc = spawn([*UP, "--port", str(free_port()), "--workers", "1", "--ephemeral"], env, tmp_path / "up.log",
                 cwd=tmp_path)
    try:
        code = proc.process.wait(60)
    finally:
        proc.stop()
    output = proc.output()
    assert code == 1, output
    assert "the API exited with 1 before it answered" in output and "is up" not in output
    assert not list(tmp_path.glob(f"{DIR_PREFIX}*"))               # and it cleaned up after itself


def test_a_sigkilled_up_leaves_no_process_and_its_redis_directory_is_swept(tmp_path: Path) -> None:
    env = user_env(tmp_path)
    proc = spawn([*UP, "--port", str(free_port()), "--workers", "1", "--ephemeral"], env, tmp_path / "up.log")
    try:
        wait_for_line(proc, "ragpulse is up")
        kids = children_of(proc.process.pid)
        redis_pid = redis_child(proc.process.pid)
        [directory] = tmp_path.glob(f"{DIR_PREFIX}*")
        assert json.loads((directory / OWNER_FILE).read_text())["owner_pid"] == proc.process.pid
        proc.process.send_signal(signal.SIGKILL)
        proc.process.wait(10)
    finally:
        proc.stop()
    assert len(kids) >= 3                                          # redis, api, one worker
    left = wait_gone(kids)
    assert redis_pid not in left, "the private redis-server outlived `ragpulse up`"
    assert not left, f"orphaned children: {left}\n{proc.output()}"
    # The directory's owner is dead, so the next private Redis (any `ragpulse up`, any test session) removes it.
    assert directory.exists()
    assert sweep_stale(tmp_path) == [directory] and not directory.exists()


def test_sweep_shuts_down_a_redis_left_running_by_a_dead_owner(tmp_path: Path, monkeypatch) -> None:
    """The fallback where the kernel cannot tie Redis to its owner: the next sweep stops it, checked by its dir."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    orphan = PrivateRedis().start()
    live = tmp_path / f"{DIR_PREFIX}live"
    live.mkdir()
    (live / OWNER_FILE).write_text(json.dumps({"owner_pid": os.getpid(), "port": 1, "redis_pid": None}))
    unowned = tmp_path / f"{DIR_PREFIX}old"
    unowned.mkdir()
    try:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
        owner = json.loads((orphan.directory / OWNER_FILE).read_text())
        assert owner == {"owner_pid": os.getpid(), "port": orphan.port, "redis_pid": orphan.process.pid}
        (orphan.directory / OWNER_FILE).write_text(json.dumps({**owner, "owner_pid": int(dead.stdout)}))
        assert sweep_stale() == [orphan.directory]
        assert orphan.process.wait(10) == 0                           # SHUTDOWN NOSAVE: a clean exit
        assert not orphan.directory.exists() and live.exists() and unowned.exists()
    finally:
        orphan.stop()


def test_private_redis_refuses_a_port_where_another_redis_answers(tmp_path: Path, monkeypatch) -> None:
    """Its own server cannot bind a taken port, and the Redis answering there is someone else's: start() must fail
    (and leave that server alone) rather than hand it to a test or benchmark that then flushes it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    port = free_port()
    foreign = subprocess.Popen([redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", str(tmp_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    theirs = redis.Redis(port=port)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                theirs.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline and foreign.poll() is None, "the foreign redis-server did not start"
                time.sleep(0.05)
        theirs.set("theirs", "keep")
        script = theirs.script_load("return 1")
        with pytest.raises(ConfigError, match=rf"port {port} is served by another Redis \(pid {foreign.pid}\)"):
            PrivateRedis(port).start()
        assert theirs.get("theirs") == b"keep" and theirs.dbsize() == 1 and theirs.script_exists(script) == [True]
        assert int(theirs.info("server")["process_id"]) == foreign.pid and foreign.poll() is None
        assert not list(tmp_path.glob(f"{DIR_PREFIX}*"))          # and its own directory is gone
    finally:
        theirs.close()
        foreign.terminate()
        foreign.wait(10)


def test_the_stack_quiets_rq_unless_ragpulse_log_level_is_set(monkeypatch) -> None:
    stack = Stack(host="127.0.0.1", port=1, workers=1)
    monkeypatch.delenv("RAGPULSE_LOG_LEVEL", raising=False)
    assert stack.worker_argv()[-2:] == ["--rq-log-level", RQ_LOG_LEVEL] and RQ_LOG_LEVEL == "WARNING"
    monkeypatch.setenv("RAGPULSE_LOG_LEVEL", "info")
    assert "--rq-log-level" not in stack.worker_argv()


FOREGROUND_CHECK = f"{sys.executable} -c 'from ragpulse.ops.stack import in_foreground; print(in_foreground())'"


def on_a_terminal(script: str) -> str:
    """Run `script` under bash with job control, in a new session whose controlling terminal is a fresh pty."""
    import fcntl  # noqa: PLC0415
    import pty  # noqa: PLC0415
    import termios  # noqa: PLC0415

    def own_the_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    leader, follower = pty.openpty()
    try:
        result = subprocess.run(["bash", "-c", f"set -m; {script}"], stdin=follower, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, timeout=60, preexec_fn=own_the_terminal,
                                env=child_env("unused"), cwd=ROOT)
    finally:
        os.close(follower)
        os.close(leader)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_ctrl_c_is_offered_only_in_the_foreground_of_a_terminal() -> None:
    assert on_a_terminal(FOREGROUND_CHECK) == "True"
    assert on_a_terminal(f"{FOREGROUND_CHECK} & wait") == "False"       # `./scripts/run &`
    no_tty = subprocess.run(shlex.split(FOREGROUND_CHECK), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=60, env=child_env("unused"), cwd=ROOT)
    assert no_tty.stdout.strip() == "False"


def test_eval_exits_1_when_the_server_is_unreachable() -> None:
    server = f"http://127.0.0.1:{free_port()}"
    result = subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "eval", str(EXAMPLES), "--server", server],
                            capture_output=True, text=True, timeout=60, cwd=ROOT, env=child_env("unused"))
    assert result.returncode == 1 and "cannot reach" in result.stderr


def supervise_for(stack: Stack, seconds: float) -> tuple[int | None, float]:
    """Run the stack's supervision loop over its children for up to `seconds`: (its result, None if it was still
    supervising, and how long it ran); every child is stopped after."""
    result: list[int] = []
    for child in stack.children:
        child.start()
    started = time.monotonic()
    thread = threading.Thread(target=lambda: result.append(stack._supervise()))
    thread.start()
    try:
        thread.join(seconds)
        elapsed, supervising = time.monotonic() - started, thread.is_alive()
    finally:
        stack._stopping = True
        thread.join(10)
        for child in stack.children:
            child.kill()
    return (None if supervising else result[0]), elapsed


def exits_after(seconds: float, log: Path, code: int = 1) -> Child:
    """A child that notes each start of it in `log`, then exits with `code` after `seconds`."""
    script = f"import sys, time; open({str(log)!r}, 'a').write('x'); time.sleep({seconds}); sys.exit({code})"
    return Child("flaky", [sys.executable, "-c", script], child_env("unused"))


def test_a_child_that_exits_now_and_then_is_restarted_however_often_over_a_long_life(tmp_path: Path) -> None:
    # It lives 0.6 s and waits a backoff (0.25 s at least) before each restart, so at most 2 of its restarts fit
    # in any 2 s and a limit of 3 per 2 s is never reached, while over 8 s it is restarted more than 3 times.
    stack = Stack(host="127.0.0.1", port=1, workers=0, restart_limit=3, restart_window=2.0)
    starts = tmp_path / "starts"
    stack.children = [exits_after(0.6, starts)]
    result, _ = supervise_for(stack, 8.0)
    assert result is None                                          # still supervising: it never gave up
    assert len(starts.read_text()) - 1 > 3                         # restarted more often than the limit in all


def test_a_crash_looping_child_stops_the_stack_after_backing_off(tmp_path: Path) -> None:
    stack = Stack(host="127.0.0.1", port=1, workers=0, restart_limit=3, restart_window=60.0)
    starts = tmp_path / "starts"
    stack.children = [exits_after(0.0, starts, code=3)]
    result, seconds = supervise_for(stack, 30.0)
    assert result == 1
    assert len(starts.read_text()) == 1 + 3                         # the first start and 3 restarts
    assert seconds >= 0.25 + 0.5 + 1.0                              # with a growing backoff, not a tight loop


LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [\w.]+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) \S.*")
"""defaults.LOG_FORMAT: `2026-12-02 04:21:52,496 ragpulse.up INFO started private redis ...`."""


def test_up_prints_its_own_lines_and_its_childrens_in_one_format(tmp_path: Path) -> None:
    """Before: `ragpulse.up INFO ...` beside Litestar's `WARNING - time - ragpulse.api - app - ...`, and a bare
    "ragpulse is up" line. An unconfigured default judge makes the API and the workers speak at start-up too."""
    env = user_env(tmp_path, RAGPULSE_JUDGE="anthropic", RAGPULSE_LOG_LEVEL="WARNING")
    proc = spawn([*UP, "--port", str(free_port()), "--workers", "1", "--ephemeral"], env, tmp_path / "up.log")
    try:
        wait_for_line(proc, "ragpulse is up")
        wait_for_line(proc, "ragpulse.worker WARNING", timeout=60)
        proc.process.send_signal(signal.SIGTERM)
        assert proc.process.wait(30) == 0
    finally:
        proc.stop()
    lines = proc.output().splitlines()
    assert [line for line in lines if not LOG_LINE.fullmatch(line)] == []
    speakers = {line.split(" ")[2] for line in lines}
    assert {"ragpulse.up", "ragpulse.api", "ragpulse.worker"} <= speakers, lines
    assert any(" ragpulse.up INFO ragpulse is up: http://" in line for line in lines)   # at any RAGPULSE_LOG_LEVEL
