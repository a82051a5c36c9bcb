"""GET /v1/sessions/{session_id}: a conversation's sampled online turns with their results, tenant-scoped."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.params import Parameter

from ragpulse.model.trace import URL_SEGMENT_PATTERN
from ragpulse.store import sessions
from ragpulse.store.sessions import SessionView
from service.context import Call

SessionIdParam = Annotated[str, Parameter(min_length=1, max_length=256, pattern=URL_SEGMENT_PATTERN,
                                          description="The session_id its traces carry.")]


class SessionController(Controller):
    """Conversations: the turns of a chat session that the sampling policy sent to the judge."""

    path = "/v1/sessions"
    tags = ["sessions"]

    @get("/{session_id:str}", sync_to_thread=True, summary="A session's sampled turns and their results")
    def read(self, session_id: SessionIdParam, call: Call) -> SessionView:
        """The session's sampled turns ordered by `turn` (turns posted without one last, in arrival order), each with
        its record as GET /v1/traces/{trace_id} answers it (`trace`: status, sampling, the result with its claims;
        null once expired). At most the 100 latest sampled turns are kept, for
        RAGPULSE_ONLINE_RESULT_TTL_SECONDS after the session's latest sampled turn. With whole-session sampling
        (`sample_by: session`, the default) a sampled session keeps all its turns. 404 for a session with no sampled
        turn kept: never sampled, expired, or another tenant's."""
        return sessions.read(call.store.redis, call.tenant, session_id)
