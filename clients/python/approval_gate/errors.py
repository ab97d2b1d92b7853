"""The errors of the client: the API's problem details (RFC 9457), and a refused webhook."""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """A problem+json answer of the API (RFC 9457): 401, 403, 404, 409, 422, 429, 503...

    ``status``, ``type``, ``title``, ``detail`` and ``code`` come from the problem document;
    ``errors`` lists each invalid field as ``{"path": ..., "message": ...}`` on validation
    problems (empty otherwise); ``problem`` is the whole document.
    """

    def __init__(self, status: int, problem: dict[str, Any], retry_after_seconds: float | None = None) -> None:
        super().__init__(f"{status} {problem.get('code', '')}: {problem.get('detail', '')}")
        self.status = status
        self.problem = problem
        #: Seconds from ``retry-after``, on 429 and 503.
        self.retry_after_seconds = retry_after_seconds

    @property
    def type(self) -> str:
        return str(self.problem.get("type", "about:blank"))

    @property
    def title(self) -> str:
        return str(self.problem.get("title", ""))

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail", ""))

    @property
    def code(self) -> str:
        """Stable and machine-readable: ``validation_failed``, ``not_found``, ``unavailable``..."""
        return str(self.problem.get("code", "internal"))

    @property
    def errors(self) -> list[dict[str, str]]:
        return list(self.problem.get("errors") or [])

    def field_error(self, path: str) -> str | None:
        """The message of the validation error naming ``path`` (``payload.amount``), if there is one."""
        return next((error["message"] for error in self.errors if error.get("path") == path), None)

    @classmethod
    def from_response(cls, status: int, reason: str, headers: Any, body: bytes) -> ApiError:
        retry_after = _seconds(headers.get("retry-after"))
        if "json" in (headers.get("content-type") or ""):
            try:
                problem = json.loads(body)
                if isinstance(problem, dict):
                    return cls(status, problem, retry_after)
            except ValueError:
                pass  # Not the API's problem document after all: described from the status alone.
        return cls(
            status,
            {
                "type": "about:blank",
                "title": reason or f"HTTP {status}",
                "status": status,
                "detail": f"The server answered {status} {reason} without a problem document.",
                "code": "internal",
            },
            retry_after,
        )


class WebhookVerificationError(Exception):
    """A delivery that is not authentic, or not a webhook event.

    ``reason`` is stable: ``missing_header``, ``invalid_timestamp``, ``timestamp_outside_tolerance``,
    ``no_matching_signature`` or ``invalid_body``; the message says it for humans.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _seconds(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else 0.0
    except ValueError:
        return None
    return seconds if seconds > 0 else None
