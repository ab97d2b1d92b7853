"""The shapes the API answers with, as the API spells them (camelCase keys); see docs/api.md."""

from __future__ import annotations

from typing import Any, Literal, Optional, TypedDict

ApprovalStatus = Literal["pending", "approved", "rejected", "changes_requested", "expired", "escalated"]


class Revision(TypedDict):
    revision: int
    payloadHash: str
    note: Optional[str]
    feedback: Optional[str]
    requestedBy: Optional[dict[str, Any]]
    at: str


class Approval(TypedDict, total=False):
    """An approval request (``ApprovalRequestView`` in the API reference)."""

    id: str
    status: ApprovalStatus
    action: str
    #: What to execute when approved: the reviewer's version if they edited it.
    payload: dict[str, Any]
    context: dict[str, Any]
    createdAt: str
    expiresAt: Optional[str]
    feedback: Optional[str]
    escalatedTo: str
    escalatedFrom: str
    agent: Optional[str]
    policyKey: str
    #: The version of the policy the current revision was evaluated under; None for an orphan.
    policyVersion: Optional[int]
    payloadHash: str
    decidedBy: Optional[dict[str, Any]]
    decidedAt: Optional[str]
    #: Distinct approvals needed (with stages, in the current stage).
    quorum: int
    #: ``{"index": 2, "name": "Finance"}``: the stage of reviewers under review; None without stages.
    stage: Optional[dict[str, Any]]
    #: Each vote, with the ``stage`` it was cast in (None without stages).
    votes: list[dict[str, Any]]
    onBehalfOf: Optional[str]
    #: Only when listed with ``include="createdByKey"``: the API key that created the request.
    createdByKey: Optional[dict[str, Any]]
    revision: int
    revisions: list[Revision]
    suggestedPayload: Optional[dict[str, Any]]
    #: ``{"receipt": {...}, "signature": "..."}`` once settled (see approval_gate.receipts); None while pending.
    receipt: Optional[dict[str, Any]]


class ApprovalList(TypedDict):
    approvals: list[Approval]
    nextCursor: Optional[str]
