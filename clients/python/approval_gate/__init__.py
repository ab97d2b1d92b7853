"""Approval Gate for Python agents: ask before acting, wait for the decision, verify webhooks.

Standard library only. Receipts and the audit log's proofs are checked by the submodule
``approval_gate.receipts``, which needs the ``cryptography`` package (the ``receipts`` extra), so it
is not imported here. See docs/python.md and docs/receipts.md in the Approval Gate repository.
"""

from ._http import RetryEvent, RetryPolicy
from .client import DEFAULT_WAIT_SECONDS, MAX_WAIT_PER_READ_SECONDS, ApprovalGate, ChangesRequestedHandler
from .errors import ApiError, WebhookVerificationError
from .types import Approval, ApprovalList, ApprovalStatus, Revision
from .webhooks import verify_webhook

__all__ = [
    "DEFAULT_WAIT_SECONDS",
    "MAX_WAIT_PER_READ_SECONDS",
    "ApiError",
    "Approval",
    "ApprovalGate",
    "ApprovalList",
    "ApprovalStatus",
    "ChangesRequestedHandler",
    "RetryEvent",
    "RetryPolicy",
    "Revision",
    "WebhookVerificationError",
    "verify_webhook",
]
