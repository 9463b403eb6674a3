"""The asyncio client of the agentmem HTTP API.

The standard library has no asynchronous HTTP client, so :class:`AsyncClient`
runs the blocking :class:`~agentmem.Client` in a worker thread
(:func:`asyncio.to_thread`): each call is one short request, urllib is a
proven HTTP/1.1 and TLS implementation, and every behaviour (errors,
retries, idempotency keys) is the blocking client's own rather than a
second implementation over asyncio streams. The event loop never blocks;
concurrent calls run in the loop's default thread pool. Cancelling a call
stops the wait, not the request, which finishes (or times out) in its
thread.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar, Union

from .client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Client
from .types import (
    AppendResult,
    Block,
    BlockChange,
    CompactResult,
    Context,
    DamagedRecord,
    ExtractResult,
    Fact,
    FactChange,
    FactHistory,
    FactsPage,
    FactSource,
    PopResult,
    RecallHit,
    RememberResult,
    Session,
    SessionPage,
    StepsPage,
)

__all__ = ["AsyncClient"]

R = TypeVar("R")


class AsyncClient:
    """An asyncio client of the agentmem HTTP API, with the methods of
    :class:`~agentmem.Client` as coroutines::

        client = agentmem.AsyncClient("http://localhost:8080")
        await client.create_session(id="s1")
        ctx = await client.get_context("s1", budget=8000)

    Args: as :class:`~agentmem.Client`; or pass ``client=`` an existing
    blocking client to share its settings.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_wait: float = 30.0,
        on_damaged: Optional[Callable[[DamagedRecord], None]] = None,
        client: Optional[Client] = None,
    ) -> None:
        if client is None:
            if base_url is None:
                raise ValueError("give base_url or client")
            client = Client(base_url, api_key, timeout=timeout, max_retries=max_retries, max_retry_wait=max_retry_wait, on_damaged=on_damaged)
        #: The blocking client the calls run on.
        self.sync = client

    def __repr__(self) -> str:
        return f"agentmem.AsyncClient({self.sync.base_url!r})"

    async def _run(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))

    # Each method is the blocking client's, run in a thread; see Client for
    # the arguments and errors.

    async def create_session(self, id: Optional[str] = None, **kwargs: Any) -> Session:
        """See :meth:`Client.create_session`."""
        return await self._run(self.sync.create_session, id, **kwargs)

    async def get_session(self, session_id: str) -> Session:
        """See :meth:`Client.get_session`."""
        return await self._run(self.sync.get_session, session_id)

    async def list_sessions(self, **kwargs: Any) -> SessionPage:
        """See :meth:`Client.list_sessions`."""
        return await self._run(self.sync.list_sessions, **kwargs)

    async def delete_session(self, session_id: str) -> None:
        """See :meth:`Client.delete_session`."""
        await self._run(self.sync.delete_session, session_id)

    async def fork_session(self, session_id: str, **kwargs: Any) -> Session:
        """See :meth:`Client.fork_session`."""
        return await self._run(self.sync.fork_session, session_id, **kwargs)

    async def append_messages(self, session_id: str, messages: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]], **kwargs: Any) -> AppendResult:
        """See :meth:`Client.append_messages`."""
        return await self._run(self.sync.append_messages, session_id, messages, **kwargs)

    async def append_steps(self, session_id: str, steps: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]], **kwargs: Any) -> AppendResult:
        """See :meth:`Client.append_steps`."""
        return await self._run(self.sync.append_steps, session_id, steps, **kwargs)

    async def read_steps(self, session_id: str, **kwargs: Any) -> StepsPage:
        """See :meth:`Client.read_steps`."""
        return await self._run(self.sync.read_steps, session_id, **kwargs)

    async def pop_message(self, session_id: str, *, if_match: Optional[int] = None) -> PopResult:
        """See :meth:`Client.pop_message`."""
        return await self._run(self.sync.pop_message, session_id, if_match=if_match)

    async def add_items(self, session_id: str, items: Sequence[Mapping[str, Any]], **kwargs: Any) -> AppendResult:
        """See :meth:`Client.add_items`."""
        return await self._run(self.sync.add_items, session_id, items, **kwargs)

    async def get_items(self, session_id: str, *, limit: Optional[int] = None, page_size: Optional[int] = None) -> List[Dict[str, Any]]:
        """See :meth:`Client.get_items`."""
        return await self._run(self.sync.get_items, session_id, limit=limit, page_size=page_size)

    async def pop_item(self, session_id: str, *, if_match: Optional[int] = None) -> Dict[str, Any]:
        """See :meth:`Client.pop_item`."""
        return await self._run(self.sync.pop_item, session_id, if_match=if_match)

    async def clear_items(self, session_id: str, *, if_match: Optional[int] = None) -> None:
        """See :meth:`Client.clear_items`."""
        await self._run(self.sync.clear_items, session_id, if_match=if_match)

    async def get_context(self, session_id: str, **kwargs: Any) -> Context:
        """See :meth:`Client.get_context`."""
        return await self._run(self.sync.get_context, session_id, **kwargs)

    async def compact(self, session_id: str, strategy: str, **kwargs: Any) -> CompactResult:
        """See :meth:`Client.compact`."""
        return await self._run(self.sync.compact, session_id, strategy, **kwargs)

    async def search_recall(self, q: str, **kwargs: Any) -> List[RecallHit]:
        """See :meth:`Client.search_recall`."""
        return await self._run(self.sync.search_recall, q, **kwargs)

    async def extract_facts(self, user_id: str, messages: Sequence[Mapping[str, Any]], *, source: Optional[Union[FactSource, Mapping[str, Any]]] = None) -> ExtractResult:
        """See :meth:`Client.extract_facts`."""
        return await self._run(self.sync.extract_facts, user_id, messages, source=source)

    async def remember(self, user_id: str, text: str, *, source: Optional[Union[FactSource, Mapping[str, Any]]] = None, **kwargs: Any) -> RememberResult:
        """See :meth:`Client.remember`."""
        return await self._run(self.sync.remember, user_id, text, source=source, **kwargs)

    async def search_facts(self, user_id: str, q: Optional[str] = None, **kwargs: Any) -> List[Fact]:
        """See :meth:`Client.search_facts`."""
        return await self._run(self.sync.search_facts, user_id, q, **kwargs)

    async def list_facts(self, user_id: str, **kwargs: Any) -> FactsPage:
        """See :meth:`Client.list_facts`."""
        return await self._run(self.sync.list_facts, user_id, **kwargs)

    async def get_fact(self, user_id: str, fact_id: str) -> FactHistory:
        """See :meth:`Client.get_fact`."""
        return await self._run(self.sync.get_fact, user_id, fact_id)

    async def forget(self, user_id: str, fact_id: str, *, reason: Optional[str] = None) -> None:
        """See :meth:`Client.forget`."""
        await self._run(self.sync.forget, user_id, fact_id, reason=reason)

    async def forget_user(self, user_id: str, *, reason: Optional[str] = None) -> Any:
        """See :meth:`Client.forget_user`."""
        return await self._run(self.sync.forget_user, user_id, reason=reason)

    async def update_fact(self, user_id: str, fact_id: str, **kwargs: Any) -> Fact:
        """See :meth:`Client.update_fact`."""
        return await self._run(self.sync.update_fact, user_id, fact_id, **kwargs)

    async def fact_history(self, user_id: str, fact_id: str) -> List[FactChange]:
        """See :meth:`Client.fact_history`."""
        return await self._run(self.sync.fact_history, user_id, fact_id)

    async def list_blocks(self, **kwargs: Any) -> List[Block]:
        """See :meth:`Client.list_blocks`."""
        return await self._run(self.sync.list_blocks, **kwargs)

    async def get_block(self, label: str, **kwargs: Any) -> Block:
        """See :meth:`Client.get_block`."""
        return await self._run(self.sync.get_block, label, **kwargs)

    async def put_block(self, label: str, value: str, **kwargs: Any) -> Block:
        """See :meth:`Client.put_block`."""
        return await self._run(self.sync.put_block, label, value, **kwargs)

    async def delete_block(self, label: str, **kwargs: Any) -> None:
        """See :meth:`Client.delete_block`."""
        await self._run(self.sync.delete_block, label, **kwargs)

    async def append_block(self, label: str, text: str, **kwargs: Any) -> Block:
        """See :meth:`Client.append_block`."""
        return await self._run(self.sync.append_block, label, text, **kwargs)

    async def replace_block(self, label: str, old: str, new: str, **kwargs: Any) -> Block:
        """See :meth:`Client.replace_block`."""
        return await self._run(self.sync.replace_block, label, old, new, **kwargs)

    async def block_history(self, label: str, **kwargs: Any) -> List[BlockChange]:
        """See :meth:`Client.block_history`."""
        return await self._run(self.sync.block_history, label, **kwargs)

    async def health(self) -> bool:
        """See :meth:`Client.health`."""
        return await self._run(self.sync.health)
