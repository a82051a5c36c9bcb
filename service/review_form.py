"""The review page's label form, read into a LabelRequest; a refused form says what to fix, in words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ragpulse.exceptions import InvalidBody
from ragpulse.model.calibration import ClaimLabel
from ragpulse.model.labels import LabelRequest
from ragpulse.reporting.review_trace import VERDICTS
from service.review_auth import form_text

YES_NO = {"yes": True, "no": False}
MAX_CLAIM_FIELDS = 1000
"""As many per-claim verdicts as LabelRequest.claims takes."""


def answers(form: Mapping[str, Any]) -> dict[str, str]:
    """The form's text fields, to fill the form again after a refusal (the token and ids are not echoed)."""
    return {name: form_text(form, name) for name in form if name not in {"csrf", "trace_id", "job_id"}}


def label_request(form: Mapping[str, Any]) -> LabelRequest:
    """The label the form asks to store; InvalidBody with a reviewer-readable message when it cannot be one."""
    missing = [q for q in ("hallucinated", "abstained") if form_text(form, q) not in YES_NO]
    if missing:
        raise InvalidBody(f"Answer yes or no to: {' and '.join(missing)}.",
                          [{"path": f"form.{q}", "message": "yes or no"} for q in missing])
    claims = [ClaimLabel(index=int(name[6:]), verdict=form_text(form, name))  # type: ignore[arg-type]
              for name in _claim_fields(form) if form_text(form, name) in VERDICTS]
    fields = {"trace_id": form_text(form, "trace_id"), "job_id": form_text(form, "job_id") or None,
              "reviewer": form_text(form, "reviewer").strip(),
              "hallucinated": YES_NO[form_text(form, "hallucinated")],
              "abstained": YES_NO[form_text(form, "abstained")],
              "claims": sorted(claims, key=lambda c: c.index) or None, "note": form_text(form, "note").strip() or None}
    try:
        return msgspec.convert(fields, LabelRequest)
    except msgspec.ValidationError as exc:
        where = str(exc).rpartition("$.")[2].rstrip("`") or "form"
        hint = {"reviewer": "Your name: 1-64 letters, digits or ._@+- (an e-mail address fits), starting with a "
                            "letter or digit.", "note": "The note holds at most 4,000 characters."}
        raise InvalidBody(hint.get(where, f"The form cannot be stored: {exc}"),
                          [{"path": f"form.{where}", "message": str(exc)}]) from None


def _claim_fields(form: Mapping[str, Any]) -> list[str]:
    names = [n for n in form if n.startswith("claim-") and n[6:].isdigit() and len(n) <= 12]
    return names[:MAX_CLAIM_FIELDS]
