"""The Python client of agentmem, the memory layer for LLM agents.

Standard library only (Python 3.9+)::

    import agentmem

    client = agentmem.Client("http://localhost:8080", api_key=None)
    client.create_session(id="s1", user_id="alice")
    client.append_messages("s1", [{"role": "user", "content": "Hi"}])
    print(client.get_context("s1", budget=8000).messages)

:class:`AsyncClient` is the asyncio client, and :class:`AgentmemSession` the
OpenAI Agents SDK's session protocol over an agentmem session. Errors are
the :class:`APIError` subclass of the API's error code
(:class:`NotFoundError`, :class:`ConflictError`...).
"""

from .aio import AsyncClient
from .client import MAX_BATCH, Client, new_idempotency_key
from .errors import (
    ERROR_CLASSES,
    AgentmemError,
    APIError,
    BodyTooLargeError,
    BudgetTooSmallError,
    CanceledError,
    ConflictError,
    ForbiddenError,
    IdempotencyKeyReusedError,
    IndexBehindError,
    InternalServerError,
    InvalidRequestError,
    MethodNotAllowedError,
    NotConfiguredError,
    NotFoundError,
    NothingToPopError,
    SummarizerFailedError,
    ToolResultConflictError,
    ToolResultsMissingError,
    TransportError,
    UnauthorizedError,
    UnavailableError,
    UnprocessableError,
    UnsupportedMediaTypeError,
)
from .session import AgentmemSession
from .types import (
    AppendResult,
    CompactResult,
    Context,
    DroppedRun,
    Fact,
    FactHistory,
    FactSource,
    PendingCalls,
    PopResult,
    RecallDocument,
    RecallHit,
    RememberResult,
    Session,
    SessionPage,
    StepsPage,
)

__version__ = "0.1.0"

__all__ = [
    "Client",
    "AsyncClient",
    "AgentmemSession",
    "MAX_BATCH",
    "new_idempotency_key",
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
    "BodyTooLargeError",
    "UnsupportedMediaTypeError",
    "UnprocessableError",
    "BudgetTooSmallError",
    "ToolResultsMissingError",
    "InternalServerError",
    "NotConfiguredError",
    "SummarizerFailedError",
    "UnavailableError",
    "IndexBehindError",
    "CanceledError",
    "ERROR_CLASSES",
    "Session",
    "SessionPage",
    "AppendResult",
    "StepsPage",
    "PopResult",
    "PendingCalls",
    "DroppedRun",
    "Context",
    "CompactResult",
    "RecallDocument",
    "RecallHit",
    "FactSource",
    "Fact",
    "RememberResult",
    "FactHistory",
]
