"""HTTP for the client, on the standard library only: JSON requests, and the retries a long wait needs."""

from __future__ import annotations

import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ApiError

#: What a restarting web process, a proxy in front of one, or a database outage answers.
RETRYABLE_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True)
class RetryEvent:
    """Told to ``on_retry`` before each pause: why a call takes long."""

    #: The attempt that failed, from 1.
    attempt: int
    delay_seconds: float
    #: ``"503"`` for an answer, or the network error (``"ConnectionRefusedError: [Errno 111] ..."``).
    reason: str


@dataclass(frozen=True)
class RetryPolicy:
    """How reads and creations are retried through dropped connections, restarts and 502/503/504.

    Pauses start at ``initial_delay`` seconds and double up to ``max_delay``, with jitter, and are at
    least what ``retry-after`` says. One call gives up once the next pause would end past ``budget``
    seconds from its first attempt: the last answer is raised as an ``ApiError``, or the last network
    error as it is.
    """

    budget: float = 60.0
    initial_delay: float = 0.25
    max_delay: float = 5.0
    on_retry: Callable[[RetryEvent], None] | None = None


class _Failed(Exception):
    """An attempt that may be tried again: a retryable status, or a connection lost."""

    def __init__(self, reason: str, error: BaseException, retry_after: float = 0.0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.error = error


_NETWORK_ERRORS = (ConnectionError, http.client.HTTPException, socket.timeout, TimeoutError, urllib.error.URLError)


class Transport:
    """Sends JSON requests to the API with a bearer key, retrying only where the caller says it is safe."""

    def __init__(self, base_url: str, api_key: str, retry: RetryPolicy, user_agent: str) -> None:
        self._base = base_url.rstrip("/")
        self._headers = {
            "accept": "application/json",
            "authorization": f"Bearer {api_key}",
            "user-agent": user_agent,
        }
        self._retry = retry

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, Any] | None = None,
        retry: bool,
        timeout: float = 30.0,
    ) -> Any:
        """One call; with ``retry`` (reads, and writes that carry an idempotency key) through failures.

        The whole answer is read inside the attempt, so that a connection lost in the middle of the
        body is retried too. ``timeout`` bounds each socket operation, so it must exceed a long-poll.
        """
        url = self._base + path
        params = {name: _query_value(value) for name, value in (query or {}).items() if value is not None and value != ""}
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = None if body is None else json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        headers = dict(self._headers, **({"content-type": "application/json"} if data is not None else {}))
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(urllib.request.Request(url, data=data, headers=headers, method=method), timeout)
            except _Failed as failed:
                policy = self._retry
                backoff = min(policy.max_delay, policy.initial_delay * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
                delay = max(backoff, failed.retry_after)
                if not retry or time.monotonic() + delay - started > policy.budget:
                    raise failed.error from None
                if policy.on_retry is not None:
                    policy.on_retry(RetryEvent(attempt=attempt, delay_seconds=delay, reason=failed.reason))
                time.sleep(delay)

    def _attempt(self, request: urllib.request.Request, timeout: float) -> Any:
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, payload = response.status, response.read()
        except urllib.error.HTTPError as answer:
            with answer:
                try:
                    payload = answer.read()
                except _NETWORK_ERRORS as error:
                    raise _Failed(_describe(error), error) from error
            error = ApiError.from_response(answer.code, answer.reason, answer.headers, payload)
            if answer.code in RETRYABLE_STATUSES:
                raise _Failed(str(answer.code), error, error.retry_after_seconds or 0.0) from None
            raise error from None
        except _NETWORK_ERRORS as error:
            raise _Failed(_describe(error), error) from error
        if status == 204 or not payload:
            return None
        try:
            return json.loads(payload)
        except ValueError as error:
            raise _Failed(f"unreadable answer: {error}", error) from error


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def _describe(error: BaseException) -> str:
    cause = getattr(error, "reason", None)
    if isinstance(cause, BaseException):
        error = cause
    return f"{type(error).__name__}: {error}"
