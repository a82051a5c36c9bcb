"""Child processes that do not outlive the process that started them, and liveness checks by pid."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal the kernel sends this process when the thread that forked it exits."""


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl, resolved once in the parent: loading a library in a forked child of a threaded parent can
    deadlock, calling an already resolved function cannot."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()

PDEATHSIG_AVAILABLE = _PRCTL is not None
"""Whether children can be tied to their parent by the kernel (Linux). Elsewhere the fallbacks apply: a private
Redis left behind is shut down, and its directory removed, by the next PrivateRedis (see redis_server.sweep_stale)."""


def die_with_parent(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None]:
    """A `preexec_fn` for subprocess.Popen: the child gets `sig` when its parent dies, even by SIGKILL (Linux).

    Create it in the thread that calls Popen and keeps running: the kernel sends the signal when that *thread*
    exits. If the parent died between fork and prctl, the child signals itself at once.
    """
    parent = os.getpid()

    def preexec() -> None:
        if _PRCTL is not None and _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0 and os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # with /proc: it exited just now; without: kill(pid, 0) said alive
    except OSError:
        return True
