"""An OpenAI Agents SDK session stored in agentmem."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, TypeVar, Union

from .aio import AsyncClient
from .client import Client, batches
from .errors import ConflictError, NotFoundError, NothingToPopError
from .types import CHAT_PINNING, AutoCompact, Pinning

__all__ = ["AgentmemSession"]

R = TypeVar("R")

Item = Dict[str, Any]


def _plain(item: Any) -> Item:
    """An item as a JSON object: a mapping (the SDK's TypedDicts), or a
    pydantic model (the Responses API's output items) dumped as the SDK
    dumps them."""
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dict(dump(exclude_unset=True, mode="json"))
    raise TypeError(f"an item must be a mapping or a pydantic model, not {type(item).__name__}")


class AgentmemSession:
    """The OpenAI Agents SDK's session protocol (``agents.memory.Session``)
    over an agentmem session, through the items routes::

        from agents import Agent, Runner
        import agentmem

        client = agentmem.AsyncClient("http://localhost:8080")
        session = agentmem.AgentmemSession("conversation-1", client, user_id="alice")
        result = await Runner.run(agent, "Hello", session=session)

    ``get_items`` returns exactly the items ``add_items`` stored, in order,
    whatever their type (messages, ``function_call`` and its output added
    in one call or separate ones, ``reasoning``, tool calls of every
    kind). The session is created on first use (with ``user_id``,
    ``agent``, ``metadata``, ``retention``, ``pinning``, by default
    :data:`~agentmem.CHAT_PINNING`, and ``auto_compact``) if it does not
    exist. The
    conversation renders as chat turns in agentmem's contexts and
    inspector, and is indexed for recall.

    Args:
        session_id: the agentmem session ID (letters, digits and ``._:-``).
        client: an :class:`~agentmem.AsyncClient`, or a blocking
            :class:`~agentmem.Client` (run in a thread).
        pinning: what the session's contexts always show, when this
            creates it: by default a chat's, the system prompts and the
            newest summary (the first question is one among many).
        auto_compact: the session's automatic compaction, when this
            creates it; default none.
        session_settings: the SDK's ``SessionSettings``; its ``limit`` is
            the default of :meth:`get_items`.
    """

    def __init__(
        self,
        session_id: str,
        client: Union[AsyncClient, Client],
        *,
        user_id: Optional[str] = None,
        agent: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        retention: Optional[str] = None,
        pinning: Union[Pinning, Mapping[str, bool]] = CHAT_PINNING,
        auto_compact: Union[AutoCompact, Mapping[str, Any], None] = None,
        session_settings: Any = None,
    ) -> None:
        self.session_id = session_id
        self.client = client if isinstance(client, AsyncClient) else AsyncClient(client=client)
        self.session_settings = session_settings
        self._create = dict(user_id=user_id, agent=agent, metadata=metadata, retention=retention, pinning=pinning, auto_compact=auto_compact)
        self._exists = False

    def __repr__(self) -> str:
        return f"AgentmemSession({self.session_id!r})"

    async def _on_session(self, op: Callable[[], Awaitable[R]]) -> R:
        """Runs op; if the session does not exist yet, creates it and runs
        op again."""
        try:
            out = await op()
        except NotFoundError:
            if self._exists:
                raise
            try:
                await self.client.create_session(self.session_id, **{k: v for k, v in self._create.items() if v is not None})
            except ConflictError:
                pass  # created meanwhile, by another process
            out = await op()
        self._exists = True
        return out

    async def get_items(self, limit: Optional[int] = None) -> List[Item]:
        """Returns the session's items, oldest first; with ``limit``, the
        newest ``limit`` of them (still oldest first)."""
        if limit is None and self.session_settings is not None:
            limit = getattr(self.session_settings, "limit", None)
        if limit is not None and limit <= 0:
            return []
        return await self._on_session(lambda: self.client.get_items(self.session_id, limit=limit))

    async def add_items(self, items: List[Any]) -> None:
        """Appends items. A ``function_call`` may come before its output, in
        this call or a later one; each request carries a new idempotency
        key, so the client's retries store nothing twice."""
        plain = [_plain(i) for i in items]
        for batch in batches(plain):
            await self._on_session(lambda b=batch: self.client.add_items(self.session_id, b))

    async def pop_item(self) -> Optional[Item]:
        """Removes the newest item and returns it, or ``None`` when the
        session has none. A ``function_call_output`` popped leaves its call
        pending again."""
        try:
            return await self._on_session(lambda: self.client.pop_item(self.session_id))
        except NothingToPopError:
            return None

    async def clear_session(self) -> None:
        """Removes every item (agentmem's log keeps them; the session stays
        usable)."""
        await self._on_session(lambda: self.client.clear_items(self.session_id))
