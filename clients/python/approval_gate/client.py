"""The client: ask Approval Gate before an agent acts, and wait for the decision."""

from __future__ import annotations

import math
import time
import uuid
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote

from ._http import RetryPolicy, Transport
from .types import Approval, ApprovalList

#: The most seconds the API holds one read open (``GET /v1/approvals/:id?wait=``).
MAX_WAIT_PER_READ_SECONDS = 30
#: How long ``request_approval(wait=True)`` waits for a decision, in seconds.
DEFAULT_WAIT_SECONDS = 300

#: The payload to send as the next revision, or None to stop and return the request for changes.
ChangesRequestedHandler = Callable[[str, "dict[str, Any] | None", Approval], "dict[str, Any] | None"]

_VERSION = "0.1.0"


def _wait_seconds(wait: bool | float) -> float:
    seconds = float(DEFAULT_WAIT_SECONDS if wait is True else 0 if wait is False else wait)
    if not seconds >= 0:  # also refuses NaN
        raise ValueError(f"wait must be True, False or a number of seconds, 0 or more; got {wait!r}")
    return seconds


def _awaits_decision(approval: Approval) -> bool:
    """Pending, or escalated to a successor (which may be)."""
    return approval["status"] == "pending" or (approval["status"] == "escalated" and bool(approval.get("escalatedTo")))


class ApprovalGate:
    """A client of the Approval Gate API for an agent (or a reviewer's service), by API key.

    Reads, creations and revisions are retried through dropped connections, a restarting web
    process and 502/503/504 answers (see ``RetryPolicy``); a decision is sent once. Every refusal
    is raised as an ``ApiError`` carrying the problem details.
    """

    def __init__(self, base_url: str, api_key: str, *, retry: RetryPolicy | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, e.g. http://localhost:3000; got {base_url!r}")
        if not api_key:
            raise ValueError("api_key is required")
        self._http = Transport(base_url, api_key, retry or RetryPolicy(), f"approval-gate-python/{_VERSION}")

    def request_approval(
        self,
        action: str,
        payload: Mapping[str, Any],
        policy_key: str,
        *,
        context: Mapping[str, Any] | None = None,
        agent: str | None = None,
        on_behalf_of: str | None = None,
        idempotency_key: str | None = None,
        wait: bool | float = True,
        on_wait: Callable[[Approval], None] | None = None,
        on_changes_requested: ChangesRequestedHandler | None = None,
    ) -> Approval:
        """Creates an approval request and waits until it is settled or ``wait`` runs out.

        ``wait``: True waits up to 300 s, False returns right after the creation, a number is
        seconds. Past it the request is returned as it is then: still ``pending``. The creation
        carries an idempotency key (``idempotency_key``, or a UUID made here), so its retries make
        one request. An ``escalated`` request is followed to its successor: what is returned is the
        last of the chain (its ``escalatedFrom`` says so). When approved, its ``payload`` is what to
        execute: a reviewer may have edited it.

        ``on_changes_requested(feedback, suggested_payload, approval)`` answers a request for
        changes with the payload to send as the next revision (waited for in turn, within the same
        ``wait``), or None to stop and return it; without it, a request for changes is returned.
        """
        deadline = time.monotonic() + _wait_seconds(wait)
        key = idempotency_key or str(uuid.uuid4())
        body: dict[str, Any] = {"action": action, "payload": dict(payload), "policyKey": policy_key, "idempotencyKey": key}
        for name, value in (("context", context), ("agent", agent), ("onBehalfOf", on_behalf_of)):
            if value is not None:
                body[name] = dict(value) if isinstance(value, Mapping) else value
        created = self._http.request("POST", "/v1/approvals", body=body, retry=True)
        approval = self._wait_until(created, deadline, on_wait)
        while approval["status"] == "changes_requested" and on_changes_requested is not None:
            revised_payload = on_changes_requested(approval.get("feedback") or "", approval.get("suggestedPayload"), approval)
            if revised_payload is None:
                return approval
            # One key per revision, from the creation's: a retry of this revision makes no second one.
            revised = self.revise(
                approval["id"], revised_payload, idempotency_key=f"{key}:revision:{approval['revision'] + 1}"
            )
            approval = self._wait_until(revised, deadline, on_wait)
        return approval

    def wait_for_decision(
        self, approval: Approval, *, wait: bool | float = True, on_wait: Callable[[Approval], None] | None = None
    ) -> Approval:
        """Waits, in reads of at most 30 s, until ``approval`` is no longer pending or ``wait`` runs out, following escalations."""
        return self._wait_until(approval, time.monotonic() + _wait_seconds(wait), on_wait)

    def get_approval(self, approval_id: str, *, wait: float | None = None) -> Approval:
        """Reads an approval; with ``wait`` (1 to 30 s) the API holds the read while it is pending."""
        return self._http.request(
            "GET",
            f"/v1/approvals/{_segment(approval_id)}",
            query={"wait": None if wait is None else int(wait)},
            retry=True,
            timeout=30.0 + (wait or 0),
        )

    def list_approvals(
        self,
        *,
        status: str | Sequence[str] | None = None,
        action: str | None = None,
        agent: str | None = None,
        policy_key: str | None = None,
        created_from: str | None = None,
        created_to: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ApprovalList:
        """A page of approvals, newest first: ``{"approvals": [...], "nextCursor": ...}``; pass ``nextCursor`` as ``cursor``."""
        query = {
            "status": status,
            "action": action,
            "agent": agent,
            "policyKey": policy_key,
            "from": created_from,
            "to": created_to,
            "limit": limit,
            "cursor": cursor,
        }
        return self._http.request("GET", "/v1/approvals", query=query, retry=True)

    def decide(
        self,
        approval_id: str,
        verdict: str,
        *,
        feedback: str | None = None,
        edited_payload: Mapping[str, Any] | None = None,
        suggested_payload: Mapping[str, Any] | None = None,
        revision: int | None = None,
    ) -> Approval:
        """Votes ``approved``, ``rejected`` or ``changes_requested``, as a reviewer's key (the key that asked may not).

        Sent once, never retried: a retry of a decision that did land would be refused as a conflict.
        """
        body: dict[str, Any] = {"verdict": verdict}
        for name, value in (
            ("feedback", feedback),
            ("editedPayload", edited_payload),
            ("suggestedPayload", suggested_payload),
            ("revision", revision),
        ):
            if value is not None:
                body[name] = dict(value) if isinstance(value, Mapping) else value
        return self._http.request("POST", f"/v1/approvals/{_segment(approval_id)}/decision", body=body, retry=False)

    def revise(
        self,
        approval_id: str,
        payload: Mapping[str, Any],
        *,
        note: str | None = None,
        context: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Approval:
        """Answers a request for changes with a revised payload: the same approval, pending again.

        Only the principal that created the request may revise it. Returns at once;
        ``wait_for_decision`` waits for the reviewers. The idempotency key (made here when not
        given) makes the retries through a dropped connection one revision.
        """
        body: dict[str, Any] = {"payload": dict(payload), "idempotencyKey": idempotency_key or str(uuid.uuid4())}
        if note is not None:
            body["note"] = note
        if context is not None:
            body["context"] = dict(context)
        return self._http.request("POST", f"/v1/approvals/{_segment(approval_id)}/revisions", body=body, retry=True)

    def _wait_until(self, approval: Approval, deadline: float, on_wait: Callable[[Approval], None] | None) -> Approval:
        while _awaits_decision(approval):
            successor = approval.get("escalatedTo") if approval["status"] == "escalated" else None
            seconds = min(MAX_WAIT_PER_READ_SECONDS, math.floor(deadline - time.monotonic()))
            if seconds < 1:
                return approval if successor is None else self.get_approval(successor)
            if on_wait is not None:
                on_wait(approval)
            approval = self.get_approval(successor or approval["id"], wait=seconds)
        return approval


def _segment(value: str) -> str:
    return quote(value, safe="")
