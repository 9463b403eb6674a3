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

from . import errors, types
from .aio import AsyncClient
from .client import MAX_BATCH, UNSET, Client, new_idempotency_key
from .errors import *  # noqa: F401,F403 (the exceptions, listed in errors.__all__)
from .session import AgentmemSession
from .types import *  # noqa: F401,F403 (the result dataclasses, listed in types.__all__)

__version__ = "0.1.0"

__all__ = ["Client", "AsyncClient", "AgentmemSession", "MAX_BATCH", "UNSET", "new_idempotency_key"] + errors.__all__ + types.__all__
