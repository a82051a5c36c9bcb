"""`ragpulse up` keeps its private Redis's data in a data directory: a restart finds the earlier jobs, `--ephemeral`
keeps nothing, and a lock keeps a second stack off a directory in use."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ragpulse.exceptions import ConfigError
from ragpulse.ops.data_dir import DataDirLock, default_data_dir
from ragpulse.ops.redis_server import DIR_PREFIX, free_port
from tests.support import ROOT, Proc, spawn, wait_for_job, wait_for_line
from tests.test_stack import UP, user_env

TRACES = [{"trace_id": f"t{n}", "query": f"question {n}", "answer": "The warranty lasts two years.",
           "retrieved_docs": [{"id": "w", "text": "The warranty lasts two years."}, {"id": "x", "text": "Other."}],
           "gold_doc_ids": ["w" if n % 2 else "x"]} for n in range(6)]


# -- where the data lives ----------------------------------------------------------------------------------------

def test_the_default_data_directory_follows_the_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_data_dir({"XDG_DATA_HOME": "/srv/data"}, "linux") == Path("/srv/data/ragpulse")
    assert default_data_dir({"XDG_DATA_HOME": "/srv/data"}, "darwin") == Path("/srv/data/ragpulse")
    # The XDG spec ignores a relative XDG_DATA_HOME.
    assert default_data_dir({"XDG_DATA_HOME": "data"}, "linux") == tmp_path / ".local" / "share" / "ragpulse"
    assert default_data_dir({}, "linux") == tmp_path / ".local" / "share" / "ragpulse"
    assert default_data_dir({}, "darwin") == tmp_path / "Library" / "Application Support" / "ragpulse"
    assert default_data_dir({"LOCALAPPDATA": "/c/AppData"}, "win32") == Path("/c/AppData/ragpulse")


def test_a_locked_directory_names_its_holder_and_is_free_once_released(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path / "d").acquire({"pid": os.getpid(), "url": "http://127.0.0.1:1"})
    assert json.loads((tmp_path / "d" / "ragpulse.lock").read_text())["pid"] == os.getpid()
    with pytest.raises(ConfigError, match=rf"in use by another `ragpulse up` \(pid {os.getpid()}, "
                                          r"http://127\.0\.0\.1:1\).*--data-dir"):
        DataDirLock(tmp_path / "d", wait=0).acquire({"pid": 1})
    first.release()
    DataDirLock(tmp_path / "d", wait=0).acquire({"pid": os.getpid()}).release()


def test_the_lock_lasts_as_long_as_a_process_handed_its_descriptor(tmp_path: Path) -> None:
    """Like the Redis of a stack that has exited: the next stack waits for it (bounded), not opens its files."""
    lock = DataDirLock(tmp_path).acquire({"pid": 0})
    assert lock.fd is not None
    redis_like = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"], pass_fds=(lock.fd,))
    lock.note(redis_pid=redis_like.pid)
    lock.release()                                                     # the holder (pid 0: not alive) is gone
    with pytest.raises(ConfigError, match=rf"redis-server \(pid {redis_like.pid}\) of a `ragpulse up` that has "):
        DataDirLock(tmp_path, wait=0).acquire({"pid": os.getpid()})
    DataDirLock(tmp_path, wait=30).acquire({"pid": os.getpid()}).release()   # waits until it exits
    assert redis_like.poll() == 0


def test_an_unusable_data_directory_exits_2_naming_it_and_the_way_out(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = subprocess.run([*UP, "--port", str(free_port()), "--workers", "1", "--data-dir", str(blocker / "d")],
                            capture_output=True, text=True, timeout=60, cwd=ROOT, env=user_env(tmp_path))
    assert result.returncode == 2, result.stderr
    assert f"cannot use the data directory {blocker / 'd'}" in result.stderr and "--ephemeral" in result.stderr


# -- restarts ----------------------------------------------------------------------------------------------------

def start_up(tmp_path: Path, name: str, *args: str) -> tuple[Proc, str, str]:
    port = free_port()
    proc = spawn([*UP, "--port", str(port), "--workers", "1", *args], user_env(tmp_path), tmp_path / f"{name}.log")
    return proc, f"http://127.0.0.1:{port}", wait_for_line(proc, "ragpulse is up")


def stop(proc: Proc) -> None:
    proc.process.send_signal(signal.SIGTERM)
    assert proc.process.wait(60) == 0, proc.output()


def evaluate(url: str) -> tuple[str, dict]:
    with httpx.Client(base_url=url, timeout=30, trust_env=False) as http:
        posted = http.post("/v1/batches", json={"traces": TRACES, "options": {"judge": "local"}})
        assert posted.status_code == 202, posted.text
        job_id = posted.json()["job_id"]
        assert wait_for_job(http, job_id)["status"] == "finished"
        return job_id, http.get(f"/v1/jobs/{job_id}/report").json()


@pytest.mark.integration
def test_a_restarted_stack_reads_the_earlier_jobs_report_and_a_second_stack_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first, url, said = start_up(tmp_path, "first", "--data-dir", str(data))
    try:
        assert f"data in {data}" in said
        job_id, report = evaluate(url)
        assert report["counts"]["total"] == report["counts"]["ok"] == len(TRACES)
        # A second stack on the same directory starts nothing and names the first.
        second = subprocess.run([*UP, "--port", str(free_port()), "--workers", "1", "--data-dir", str(data)],
                                capture_output=True, text=True, timeout=60, cwd=ROOT, env=user_env(tmp_path))
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"the data directory {data} is in use by another `ragpulse up` (pid {first.process.pid}, " \
               in second.stderr
        assert "is up" not in second.stdout + second.stderr
        stop(first)                                                  # SIGTERM: Redis writes its append-only file
    finally:
        first.stop()
    again, url, said = start_up(tmp_path, "again", "--data-dir", str(data))
    try:
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as http:
            job = http.get(f"/v1/jobs/{job_id}")
            assert job.status_code == 200, job.text
            assert job.json()["status"] == "finished"
            assert http.get(f"/v1/jobs/{job_id}/report").json() == report
            assert len(http.get(f"/v1/jobs/{job_id}/results", params={"limit": 100}).json()["items"]) == len(TRACES)
        stop(again)
    finally:
        again.stop()


@pytest.mark.integration
def test_an_ephemeral_stack_keeps_nothing(tmp_path: Path) -> None:
    first, url, said = start_up(tmp_path, "first", "--ephemeral")
    try:
        assert "ephemeral: nothing is kept" in said
        job_id, _ = evaluate(url)
        stop(first)
    finally:
        first.stop()
    assert not (tmp_path / "xdg-data").exists()                      # the default data directory was never made
    assert not list(tmp_path.glob(f"{DIR_PREFIX}*"))                  # and the throw-away one is gone
    again, url, _ = start_up(tmp_path, "again", "--ephemeral")
    try:
        assert httpx.get(f"{url}/v1/jobs/{job_id}", trust_env=False).status_code == 404
        stop(again)
    finally:
        again.stop()


def test_data_dir_flags_do_not_apply_to_an_external_redis(tmp_path: Path) -> None:
    """With REDIS_URL the data directory is neither used nor locked, and `up` says the flag does not apply."""
    env = {**user_env(tmp_path), "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    result = subprocess.run([*UP, "--port", str(free_port()), "--workers", "1", "--data-dir", str(tmp_path / "d"),
                             "--ready-timeout", "1"], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert "--data-dir does not apply: REDIS_URL points at an external Redis" in result.stderr
    assert not (tmp_path / "d").exists()
