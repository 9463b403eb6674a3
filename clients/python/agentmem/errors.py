"""Exceptions of the agentmem client.

Every error response of the API is ``{"error": {"code", "message", "field",
...}}``; the client raises the subclass of :class:`APIError` named after its
code (``api/errors.go`` lists the codes), so callers catch what they can
handle::

    try:
        client.pop_message("s1")
    except agentmem.NothingToPopError:
        pass

A request that never got an answer (connection refused, timeout) raises
:class:`TransportError`. All of them are :class:`AgentmemError`.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "AgentmemError",
    "TransportError",
    "APIError",
    "InvalidRequestError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "MethodNotAllowedError",
    "ConflictError",
    "IdempotencyKeyReusedError",
    "ToolResultConflictError",
    "NothingToPopError",
    "ReadOnlyError",
    "BodyTooLargeError",
    "UnsupportedMediaTypeError",
    "UnprocessableError",
    "BudgetTooSmallError",
    "OverLimitError",
    "NoMatchError",
    "ToolResultsMissingError",
    "InternalServerError",
    "NotConfiguredError",
    "SummarizerFailedError",
    "ExtractionFailedError",
    "UnavailableError",
    "IndexBehindError",
    "CanceledError",
    "UpstreamNotConfiguredError",
    "HistoryDivergedError",
    "UpstreamUnreachableError",
    "UpstreamRedirectError",
    "ERROR_CLASSES",
    "error_from_response",
]


class AgentmemError(Exception):
    """The base of every error the client raises."""


class TransportError(AgentmemError):
    """The request got no HTTP answer: the server is unreachable, the
    connection broke or the request timed out. A write may or may not have
    been stored; retrying it with the same idempotency key is safe."""


class APIError(AgentmemError):
    """An error response of the API.

    Attributes:
        status: the HTTP status.
        code: the API's error code (``"invalid"``, ``"not_found"``...).
        message: what went wrong, for people.
        field: the offending input (``"items[1].call_id"``, a header or a
            query parameter), or ``None``.
        last_seq: with a failed ``If-Match``, the session's current last
            sequence number.
        retry_after: the ``Retry-After`` header of a 503, in seconds.
        body: the whole ``error`` object.
    """

    #: The code this class stands for (``None``: any code without a class).
    code_name: Optional[str] = None

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: Optional[str] = None,
        *,
        last_seq: Optional[int] = None,
        retry_after: Optional[float] = None,
        body: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.last_seq = last_seq
        self.retry_after = retry_after
        self.body: Dict[str, Any] = dict(body or {})
        where = f" ({field})" if field else ""
        super().__init__(f"{status} {code}{where}: {message}")


class InvalidRequestError(APIError):
    """400 ``invalid``: the request is malformed or breaks a rule."""

    code_name = "invalid"


class UnauthorizedError(APIError):
    """401 ``unauthorized``: no API key where one is required, or a bad one."""

    code_name = "unauthorized"


class ForbiddenError(APIError):
    """403 ``forbidden``: a cross-origin request from an origin not allowed."""

    code_name = "forbidden"


class NotFoundError(APIError):
    """404 ``not_found``: no such session (or another tenant's), fact or route."""

    code_name = "not_found"


class MethodNotAllowedError(APIError):
    """405 ``method_not_allowed``."""

    code_name = "method_not_allowed"


class ConflictError(APIError):
    """409 ``conflict``: ``If-Match`` did not hold (``last_seq`` is the
    session's current one; for a memory block, read it again for its
    version), or an ID is taken."""

    code_name = "conflict"


class IdempotencyKeyReusedError(ConflictError):
    """409 ``idempotency_key_reused``: the key was used for a different
    request; nothing was stored."""

    code_name = "idempotency_key_reused"


class ToolResultConflictError(ConflictError):
    """409 ``tool_result_conflict``: the call already has a different
    result; nothing was stored."""

    code_name = "tool_result_conflict"


class NothingToPopError(ConflictError):
    """409 ``nothing_to_pop``: the session's working set is empty."""

    code_name = "nothing_to_pop"


class ReadOnlyError(ConflictError):
    """409 ``read_only``: an append or a replace of a read-only memory
    block; nothing changed (:meth:`~agentmem.Client.put_block` may still
    set it)."""

    code_name = "read_only"


class BodyTooLargeError(APIError):
    """413 ``body_too_large``."""

    code_name = "body_too_large"


class UnsupportedMediaTypeError(APIError):
    """415 ``unsupported_media_type``."""

    code_name = "unsupported_media_type"


class UnprocessableError(APIError):
    """A 422: the request is well formed but cannot be served."""


class BudgetTooSmallError(UnprocessableError):
    """422 ``budget_too_small``: the pinned steps need more tokens than the
    budget. ``required`` and ``budget`` say how many."""

    code_name = "budget_too_small"

    @property
    def required(self) -> Optional[int]:
        """The tokens the pinned steps need."""
        return self.body.get("required")

    @property
    def budget(self) -> Optional[int]:
        """The budget asked for."""
        return self.body.get("budget")


class OverLimitError(UnprocessableError):
    """422 ``over_limit``: the edit would take a memory block past its
    limit of characters; ``field`` names the input (``value``, ``text``,
    ``new``, or ``limit``). Nothing changed."""

    code_name = "over_limit"


class NoMatchError(UnprocessableError):
    """422 ``no_match``: a memory block replace's ``old`` text occurs zero
    times or more than once in the block (the message says how often).
    Nothing changed."""

    code_name = "no_match"


class ToolResultsMissingError(UnprocessableError):
    """422 ``tool_results_missing``: tool calls sent without their results.

    Current servers store such calls as pending and never return this code.
    """

    code_name = "tool_results_missing"


class InternalServerError(APIError):
    """500 ``internal``: a failure nobody expected; the server logs it."""

    code_name = "internal"


class NotConfiguredError(APIError):
    """501 ``not_configured``: the server runs without recall or facts."""

    code_name = "not_configured"


class SummarizerFailedError(APIError):
    """502 ``summarizer_failed``: the LLM summarizer failed; retry."""

    code_name = "summarizer_failed"


class ExtractionFailedError(APIError):
    """502 ``extraction_failed``: the server's fact extractor (an LLM)
    failed or answered nothing usable; nothing was written; retry."""

    code_name = "extraction_failed"


class UnavailableError(APIError):
    """503 ``unavailable``: the store is busy, unreachable or shutting down,
    or other writers of the session got ahead of a write without
    ``If-Match`` on every try the server made (nothing was stored). The
    client retries these itself when the request is safe to repeat (see
    ``Client(max_retries=...)``)."""

    code_name = "unavailable"


class IndexBehindError(UnavailableError):
    """503 ``index_behind``: a fresh recall search timed out waiting for the
    index; retry."""

    code_name = "index_behind"


class CanceledError(APIError):
    """499 ``canceled``: the request was canceled (servers only log it)."""

    code_name = "canceled"


class UpstreamNotConfiguredError(InvalidRequestError):
    """400 ``upstream_not_configured``: the proxy routes (``/v1/chat/completions``,
    ``/v1/messages``) need an upstream provider the server was not given."""

    code_name = "upstream_not_configured"


class HistoryDivergedError(ConflictError):
    """409 ``history_diverged``: a proxied request's history departs from the
    session's too far back for the proxy to rewind it."""

    code_name = "history_diverged"


class UpstreamUnreachableError(APIError):
    """502 ``upstream_unreachable``: the proxy could not reach the upstream
    provider; nothing of a reply was recorded."""

    code_name = "upstream_unreachable"


class UpstreamRedirectError(APIError):
    """502 ``upstream_redirect``: the upstream provider answered with a
    redirect, which the proxy does not follow (the server's provider key and
    the request go only to the configured upstream); nothing of a reply was
    recorded."""

    code_name = "upstream_redirect"


#: The exception class of each API error code.
ERROR_CLASSES: Dict[str, Type[APIError]] = {
    cls.code_name: cls
    for cls in (
        InvalidRequestError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        MethodNotAllowedError,
        ConflictError,
        IdempotencyKeyReusedError,
        ToolResultConflictError,
        NothingToPopError,
        ReadOnlyError,
        BodyTooLargeError,
        UnsupportedMediaTypeError,
        BudgetTooSmallError,
        OverLimitError,
        NoMatchError,
        ToolResultsMissingError,
        InternalServerError,
        NotConfiguredError,
        SummarizerFailedError,
        ExtractionFailedError,
        UnavailableError,
        IndexBehindError,
        CanceledError,
        UpstreamNotConfiguredError,
        HistoryDivergedError,
        UpstreamUnreachableError,
        UpstreamRedirectError,
    )
    if cls.code_name
}


def error_from_response(status: int, body: Any, retry_after: Optional[float] = None) -> APIError:
    """Returns the exception for an error response: the class of its code,
    or :class:`APIError` for a code (or a body) this client does not know."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        text = body if isinstance(body, str) else repr(body)
        return APIError(status, "unknown", f"HTTP {status}: {text[:200]}", retry_after=retry_after)
    code = str(err.get("code") or "unknown")
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        cls = UnprocessableError if status == 422 else APIError
    last_seq = err.get("last_seq")
    return cls(
        status,
        code,
        str(err.get("message") or ""),
        err.get("field") or None,
        last_seq=last_seq if isinstance(last_seq, int) else None,
        retry_after=retry_after,
        body=err,
    )
