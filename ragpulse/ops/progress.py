"""The progress of `ragpulse eval` and `gate` on stderr: a bar redrawn in place (`\\r`) on a terminal; elsewhere (a CI
log, a file) plain lines, one when the count has moved and PROGRESS_LINE_SECONDS have passed, and the last one."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from ragpulse.config import defaults
from ragpulse.model.results import TERMINAL, JobView

BAR_WIDTH = 30


class Progress:
    """Called with the jobs' views at each poll; close() ends the bar's line."""

    def __init__(self, stream: TextIO | None = None, interactive: bool | None = None,
                 every: float = defaults.PROGRESS_LINE_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.interactive = _is_terminal(self.stream) if interactive is None else interactive
        self.every, self.clock = every, clock
        self._last: tuple[int, str] | None = None
        self._next_line = 0.0

    def __call__(self, jobs: list[JobView]) -> None:
        total = max(sum(job.progress.total for job in jobs), 1)
        finished = sum(job.progress.done + job.progress.failed + job.progress.skipped for job in jobs)
        status = _status(jobs)
        filled = int(BAR_WIDTH * min(finished, total) / total)
        text = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {finished}/{total} {status}"
        if self.interactive:
            self.stream.write(f"\r{text:<{BAR_WIDTH + 36}}")
        elif self._due((finished, status)):
            self.stream.write(text + "\n")
        self.stream.flush()
        self._last = (finished, status)

    def _due(self, state: tuple[int, str]) -> bool:
        """A plain line is due for the first state, a terminal one, or a changed one once `every` has passed."""
        if state == self._last:
            return False
        now = self.clock()
        if self._last is None or state[1] in TERMINAL or now >= self._next_line:
            self._next_line = now + self.every
            return True
        return False

    def close(self) -> None:
        """End the bar's line on a terminal (plain lines end themselves)."""
        if self.interactive and self._last is not None:
            self.stream.write("\n")
            self.stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _status(jobs: list[JobView]) -> str:
    """One status for several jobs: the worst terminal one once all ended, else running (or queued), or waiting on
    the provider's batch API with its requests done so far (the provider reports them as each batch ends)."""
    statuses: set[str] = {job.status for job in jobs}
    if statuses <= TERMINAL:
        return next(s for s in ("failed", "finished_with_errors", "finished") if s in statuses)
    waiting = [job.provider for job in jobs if job.status not in TERMINAL and job.provider and job.provider.waiting]
    if waiting:
        total = sum(sum(p.counts.values()) for p in waiting)
        return f"waiting on the provider, {total - sum(p.counts.get('processing', 0) for p in waiting)}/{total} done"
    return "queued" if statuses == {"queued"} else "running"
