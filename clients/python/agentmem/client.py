"""The blocking client of the agentmem HTTP API (standard library only)."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import ConflictError, TransportError, UnavailableError, error_from_response
from .types import (
    AppendResult,
    AutoCompact,
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
    Pinning,
    PopResult,
    RecallHit,
    RememberResult,
    Session,
    SessionPage,
    StepsPage,
    build,
    settings_json,
)
from ._wire import ForgetUserResponse

__all__ = ["Client", "DEFAULT_TIMEOUT", "DEFAULT_MAX_RETRIES", "MAX_BATCH", "UNSET"]

#: Seconds a request may take, by default.
DEFAULT_TIMEOUT = 30.0
#: How many times a request answered 503 is tried again, by default.
DEFAULT_MAX_RETRIES = 3
#: The most steps, messages or items one append may carry (the server's
#: MaxStepsPerRequest).
MAX_BATCH = 1000
#: How many times a read of every item starts over when the items change
#: between two of its pages.
_READ_ATTEMPTS = 3

JSON = Any
Query = Mapping[str, Any]


class _Unset:
    """The type of UNSET."""

    def __repr__(self) -> str:
        return "UNSET"


#: The default of :meth:`Client.update_fact`'s arguments: left as it is
#: (where None sends null, which removes or reopens).
UNSET: Any = _Unset()


def _quote(segment: str) -> str:
    """Escapes one path segment (IDs may hold ':' and '.', never '/')."""
    return urllib.parse.quote(segment, safe="")


def new_idempotency_key() -> str:
    """Returns a new random Idempotency-Key."""
    return uuid.uuid4().hex


class Client:
    """A client of the agentmem HTTP API.

    ::

        client = agentmem.Client("http://localhost:8080")
        client.create_session(id="s1", user_id="alice")
        client.append_messages("s1", [{"role": "user", "content": "Hi"}])
        ctx = client.get_context("s1", budget=8000)

    It is safe to share between threads: it holds no connection state.

    Args:
        base_url: the server, e.g. ``"http://localhost:8080"``.
        api_key: the API key (sent as ``Authorization: Bearer``), if the
            server requires one.
        timeout: seconds each request may take.
        max_retries: how many times a request answered 503 (the store is
            busy or unreachable) is sent again, after the ``Retry-After`` the
            server gives (at most ``max_retry_wait`` seconds each time).
            Only requests that are safe to repeat are retried: reads,
            deletes, PUTs (a block rewritten to the same value again), and
            writes with an idempotency key or ``If-Match``.
            Appends get a new idempotency key when you give none, so they
            are always retried safely.
        max_retry_wait: the longest wait before a retry, in seconds.
        user_agent: the User-Agent header.
        on_damaged: called with a :class:`~agentmem.DamagedRecord` for each
            record that a list or a search answered by the server left out
            because its stored form does not decode (the pages of
            :meth:`list_sessions` and :meth:`list_facts` also carry them);
            by default they are only in those pages.
    """

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_wait: float = 30.0,
        user_agent: str = "agentmem-python",
        on_damaged: Optional[Callable[[DamagedRecord], None]] = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http or https URL, not {base_url!r}")
        if max_retries < 0:
            raise ValueError("max_retries must not be negative")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.user_agent = user_agent
        self.on_damaged = on_damaged

    def __repr__(self) -> str:
        return f"agentmem.Client({self.base_url!r})"

    # --- transport ---------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Query] = None,
        body: Optional[JSON] = None,
        headers: Optional[Mapping[str, str]] = None,
        retry: Optional[bool] = None,
    ) -> Tuple[int, Dict[str, str], JSON]:
        """Sends one request to the API and returns its status, headers
        (lower-case names) and decoded JSON body (``None`` when empty).

        An error status raises the :class:`~agentmem.APIError` subclass of
        its code; no answer raises :class:`~agentmem.TransportError`. A 503
        is retried as the class documents (``retry`` forces the choice).
        """
        url = self.base_url + path
        if query:
            pairs = []
            for k, v in query.items():
                if v is None:
                    continue
                if isinstance(v, bool):
                    v = "true" if v else "false"
                if isinstance(v, (list, tuple)):  # a repeated parameter
                    pairs.extend((k, str(item)) for item in v)
                    continue
                pairs.append((k, str(v)))
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        hdrs = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.api_key:
            hdrs["Authorization"] = "Bearer " + self.api_key
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        if headers:
            hdrs.update({k: v for k, v in headers.items() if v is not None})
        if retry is None:
            names = {k.lower() for k in hdrs}
            retry = method in ("GET", "HEAD", "PUT", "DELETE") or "idempotency-key" in names or "if-match" in names
        attempt = 0
        while True:
            try:
                return self._send(method, url, data, hdrs)
            except UnavailableError as e:
                if not retry or attempt >= self.max_retries:
                    raise
                attempt += 1
                wait = e.retry_after if e.retry_after is not None else min(2.0 ** (attempt - 1), 8.0)
                time.sleep(max(0.0, min(wait, self.max_retry_wait)))

    def _send(self, method: str, url: str, data: Optional[bytes], headers: Dict[str, str]) -> Tuple[int, Dict[str, str], JSON]:
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                status, hdrs, raw = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            status, hdrs = e.code, e.headers
            try:
                raw = e.read()
            finally:
                e.close()
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise TransportError(f"{method} {url}: {reason}") from e
        headers_out = {k.lower(): v for k, v in hdrs.items()}
        payload: JSON = None
        if raw:
            try:
                payload = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                payload = raw.decode("utf-8", "replace")
        if status >= 400:
            raise error_from_response(status, payload, _retry_after(headers_out.get("retry-after")))
        return status, headers_out, payload

    def _json(self, method: str, path: str, **kw: Any) -> JSON:
        return self.request(method, path, **kw)[2]

    def _damaged(self, kind: str, out: Mapping[str, Any]) -> List[DamagedRecord]:
        """The damaged records of a list or search answer, each passed to
        ``on_damaged``."""
        records = [DamagedRecord(id=d.get("id", ""), error=d.get("error", ""), kind=kind) for d in out.get("damaged") or []]
        if self.on_damaged is not None:
            for r in records:
                self.on_damaged(r)
        return records

    # --- sessions ----------------------------------------------------------

    def create_session(
        self,
        id: Optional[str] = None,
        *,
        user_id: Optional[str] = None,
        agent: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        retention: Optional[str] = None,
        ttl_seconds: Optional[int] = None,
        pinning: Union[Pinning, Mapping[str, bool], None] = None,
        auto_compact: Union[AutoCompact, Mapping[str, Any], None] = None,
        extract_facts: Optional[bool] = None,
    ) -> Session:
        """Creates a session (``POST /v1/sessions``); without ``id`` the
        server makes one. ``retention`` is ``"single_run"``, ``"session"``
        (the default) or ``"persistent"``. ``pinning`` is what its contexts
        always show (default :data:`~agentmem.DEFAULT_PINNING`; a chat
        wants :data:`~agentmem.CHAT_PINNING`) and ``auto_compact`` its
        automatic compaction (default: none), both fixed at creation and
        given as their dataclasses or as mappings. ``extract_facts`` has
        the server learn facts about ``user_id`` from the session's turns
        in the background (``True``) or not (``False``); ``None`` leaves it
        to the server's default (``serve --extract-facts``). ``True``
        without a ``user_id``, or on a server that cannot extract facts (no
        model), raises :class:`~agentmem.InvalidRequestError` (field
        ``extract_facts``). An ID in use raises
        :class:`~agentmem.ConflictError`."""
        body = _drop_none(id=id, user_id=user_id, agent=agent, metadata=metadata, retention=retention, ttl_seconds=ttl_seconds,
                          pinning=settings_json(pinning), auto_compact=settings_json(auto_compact), extract_facts=extract_facts)
        return build(Session, self._json("POST", "/v1/sessions", body=body))

    def get_session(self, session_id: str) -> Session:
        """Returns a session's metadata; a missing one raises
        :class:`~agentmem.NotFoundError`."""
        return build(Session, self._json("GET", "/v1/sessions/" + _quote(session_id)))

    def list_sessions(
        self,
        *,
        user_id: Optional[str] = None,
        agent: Optional[str] = None,
        parent_id: Optional[str] = None,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> SessionPage:
        """Lists one page of sessions, newest first (see
        :meth:`iter_sessions` for all of them); ``parent_id`` lists the
        branches of that session."""
        q = {"user_id": user_id, "agent": agent, "parent_id": parent_id, "page_size": page_size, "page_token": page_token}
        out = self._json("GET", "/v1/sessions", query=q)
        page = build(SessionPage, {k: v for k, v in out.items() if k != "damaged"})
        page.damaged = list(self._damaged("session", out))  # the client's DamagedRecord, with its kind
        return page

    def iter_sessions(
        self, *, user_id: Optional[str] = None, agent: Optional[str] = None, parent_id: Optional[str] = None, page_size: Optional[int] = None
    ) -> Iterator[Session]:
        """Yields every session, newest first, reading page after page."""
        token: Optional[str] = None
        while True:
            page = self.list_sessions(user_id=user_id, agent=agent, parent_id=parent_id, page_size=page_size, page_token=token)
            yield from page.sessions
            if not page.next_page_token:
                return
            token = page.next_page_token

    def delete_session(self, session_id: str) -> None:
        """Deletes a session and its log (branches keep what they
        inherited)."""
        self.request("DELETE", "/v1/sessions/" + _quote(session_id))

    def fork_session(
        self,
        session_id: str,
        *,
        at_seq: Optional[int] = None,
        new_id: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        retention: Optional[str] = None,
        ttl_seconds: Optional[int] = None,
        pinning: Union[Pinning, Mapping[str, bool], None] = None,
        auto_compact: Union[AutoCompact, Mapping[str, Any], None] = None,
        extract_facts: Optional[bool] = None,
    ) -> Session:
        """Creates a branch of a session that sees its log up to ``at_seq``
        (default: all of it), and returns the branch. What is left out
        (``metadata``, ``retention``, ``pinning``, ``auto_compact``,
        ``extract_facts``) is the parent's."""
        body = _drop_none(at_seq=at_seq, id=new_id, metadata=metadata, retention=retention, ttl_seconds=ttl_seconds,
                          pinning=settings_json(pinning), auto_compact=settings_json(auto_compact), extract_facts=extract_facts)
        return build(Session, self._json("POST", "/v1/sessions/" + _quote(session_id) + "/fork", body=body))

    # --- writes ------------------------------------------------------------

    def _append(self, path: str, body: JSON, idempotency_key: Optional[str], if_match: Optional[int], query: Optional[Query] = None) -> AppendResult:
        headers = {"Idempotency-Key": idempotency_key or new_idempotency_key()}
        if if_match is not None:
            headers["If-Match"] = f'"{if_match}"'
        return build(AppendResult, self._json("POST", path, body=body, headers=headers, query=query))

    def append_messages(
        self,
        session_id: str,
        messages: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        *,
        idempotency_key: Optional[str] = None,
        if_match: Optional[int] = None,
        flush_pending: bool = False,
    ) -> AppendResult:
        """Appends OpenAI-format chat messages (``POST /messages``), one or
        a list. An assistant message's tool calls stay pending until tool
        messages answer them, in this request or a later one.

        Args:
            idempotency_key: makes a retry store nothing twice (a new key is
                made when you give none, so the client's own retries are
                safe; give your own to retry across processes).
            if_match: append only if the session's last sequence number is
                still this (else :class:`~agentmem.ConflictError`).
            flush_pending: record every call still pending as failed.
        """
        body = dict(messages) if isinstance(messages, Mapping) else [dict(m) for m in messages]
        q = {"flush_pending": True} if flush_pending else None
        return self._append("/v1/sessions/" + _quote(session_id) + "/messages", body, idempotency_key, if_match, q)

    def append_steps(
        self,
        session_id: str,
        steps: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        *,
        idempotency_key: Optional[str] = None,
        if_match: Optional[int] = None,
    ) -> AppendResult:
        """Appends typed steps (``POST /steps``: ``{"type": "task", "task":
        ...}``, ``{"type": "action", ...}``...), one or a list, atomically.
        ``idempotency_key`` and ``if_match`` as :meth:`append_messages`."""
        body = dict(steps) if isinstance(steps, Mapping) else [dict(s) for s in steps]
        return self._append("/v1/sessions/" + _quote(session_id) + "/steps", body, idempotency_key, if_match)

    def read_steps(self, session_id: str, *, after: Optional[int] = None, limit: Optional[int] = None, last: Optional[int] = None) -> StepsPage:
        """Reads a session's log: the entries after sequence number
        ``after`` (``limit`` of them), or the ``last`` N."""
        q = {"after": after, "limit": limit, "last": last}
        return build(StepsPage, self._json("GET", "/v1/sessions/" + _quote(session_id) + "/steps", query=q))

    def pop_message(self, session_id: str, *, if_match: Optional[int] = None) -> PopResult:
        """Removes the newest message of the working set and returns it (a
        tool result's call is then pending again). Not idempotent: give
        ``if_match`` to make it safe to retry. An empty working set raises
        :class:`~agentmem.NothingToPopError`."""
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        return build(PopResult, self._json("POST", "/v1/sessions/" + _quote(session_id) + "/pop", headers=headers))

    # --- Responses-API items (the OpenAI Agents SDK's sessions) --------------

    def add_items(
        self,
        session_id: str,
        items: Sequence[Mapping[str, Any]],
        *,
        idempotency_key: Optional[str] = None,
        if_match: Optional[int] = None,
    ) -> AppendResult:
        """Appends Responses-API input items (``POST /items``): messages,
        ``function_call`` (pending until its output arrives, in this request
        or a later one), ``function_call_output``, ``reasoning`` and any
        other type, each kept exactly. At most :data:`MAX_BATCH` items."""
        body = {"items": [dict(i) for i in items]}
        return self._append("/v1/sessions/" + _quote(session_id) + "/items", body, idempotency_key, if_match)

    def get_items(self, session_id: str, *, limit: Optional[int] = None, page_size: Optional[int] = None) -> List[Dict[str, Any]]:
        """Returns the session's items, oldest first, exactly as appended
        (with ``limit``, the newest N, still oldest first). The server
        answers a page at a time (``page_size`` items, 1000 by default, and
        at most 8 MiB): every page is read, so all the items come back, as
        of the first page. If a pop, a clear or a compaction changes them
        between two pages, the read starts over (a few times)."""
        path = "/v1/sessions/" + _quote(session_id) + "/items"
        attempt = 0
        while True:
            attempt += 1
            items: List[Dict[str, Any]] = []
            q: Dict[str, Any] = {"limit": limit, "page_size": page_size}
            try:
                while True:
                    out = self._json("GET", path, query=q)
                    items.extend(out["items"])
                    token = out.get("next_page_token")
                    if not token:
                        return items
                    q = {"page_size": page_size, "page_token": token}
            except ConflictError as e:
                if e.field != "page_token" or attempt >= _READ_ATTEMPTS:
                    raise

    def pop_item(self, session_id: str, *, if_match: Optional[int] = None) -> Dict[str, Any]:
        """Removes the newest item and returns it exactly as appended. A
        ``function_call_output`` popped leaves its call pending again. An
        empty working set raises :class:`~agentmem.NothingToPopError`."""
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        out = self._json("POST", "/v1/sessions/" + _quote(session_id) + "/items/pop", headers=headers)
        return dict(out["item"])

    def clear_items(self, session_id: str, *, if_match: Optional[int] = None) -> None:
        """Empties the session's working set (the log keeps every step; the
        session stays usable)."""
        headers = {"If-Match": f'"{if_match}"'} if if_match is not None else None
        self.request("DELETE", "/v1/sessions/" + _quote(session_id) + "/items", headers=headers)

    # --- context and compaction -------------------------------------------

    def get_context(
        self,
        session_id: str,
        *,
        budget: Optional[int] = None,
        format: Optional[str] = None,
        tokenizer: Optional[str] = None,
        truncate: Optional[bool] = None,
        facts: Optional[int] = None,
        facts_query: Optional[str] = None,
        facts_share: Optional[float] = None,
        recall: Optional[int] = None,
    ) -> Context:
        """Returns what the model should see: the working set rendered in
        ``format`` (``"openai"``, ``"anthropic"`` or ``"observation"``),
        fitted to ``budget`` tokens, with up to ``facts`` facts about the
        session's user and up to ``recall`` turns of the user's other
        sessions in the system prompt. Pinned steps that do not fit raise
        :class:`~agentmem.BudgetTooSmallError`."""
        q = {
            "budget": budget,
            "format": format,
            "tokenizer": tokenizer,
            "truncate": truncate,
            "facts": facts,
            "facts_query": facts_query,
            "facts_share": facts_share,
            "recall": recall,
        }
        return build(Context, self._json("GET", "/v1/sessions/" + _quote(session_id) + "/context", query=q))

    def compact(
        self,
        session_id: str,
        strategy: str,
        *,
        n: Optional[int] = None,
        budget: Optional[int] = None,
        keep_last_n: Optional[int] = None,
        max_length: Optional[int] = None,
        keep_recent: Optional[int] = None,
        summarizer: Optional[str] = None,
    ) -> CompactResult:
        """Compacts the working set (the log keeps every step): strategy
        ``"keep_last_n"`` (``n``), ``"token_budget"`` (``budget``),
        ``"prune_old_observations"`` (``keep_last_n``, ``max_length``) or
        ``"summarize"`` (``keep_recent``, ``summarizer``: ``"extractive"`` or
        ``"llm"``)."""
        body = _drop_none(strategy=strategy, n=n, budget=budget, keep_last_n=keep_last_n, max_length=max_length, keep_recent=keep_recent, summarizer=summarizer)
        return build(CompactResult, self._json("POST", "/v1/sessions/" + _quote(session_id) + "/compact", body=body))

    # --- long-term memory --------------------------------------------------

    def search_recall(
        self,
        q: str,
        *,
        k: Optional[int] = None,
        offset: Optional[int] = None,
        scope: Optional[str] = None,
        before: Optional[int] = None,
        after: Optional[int] = None,
        fresh: Optional[bool] = None,
        filter: Optional[Mapping[str, str]] = None,
        similarity: Optional[str] = None,
    ) -> List[RecallHit]:
        """Searches past turns of every session (and documents): ``scope``
        is ``"session:ID"``, ``"user:ID"`` or ``"agent:ID"``; ``before`` and
        ``after`` add neighbouring turns; ``fresh`` waits until the index has
        every write made before the search; ``filter`` keeps the hits with
        every one of these metadata pairs; ``similarity`` is ``"bm25"`` (the
        default) or ``"tfidf"`` (TF-IDF cosine). An answer holds at most 8
        MiB of hits: when fewer than ``k`` come back, search again with
        ``offset`` moved past them to get any the server left out."""
        pairs = [k + ":" + v for k, v in (filter or {}).items()]
        query = {"q": q, "k": k, "offset": offset, "scope": scope, "before": before, "after": after, "fresh": fresh,
                 "filter": pairs or None, "similarity": similarity}
        out = self._json("GET", "/v1/recall/search", query=query)
        self._damaged("document", out)
        return [build(RecallHit, h) for h in out.get("hits") or []]

    def remember(
        self,
        user_id: str,
        text: str,
        *,
        confidence: Optional[float] = None,
        source: Optional[Union[FactSource, Mapping[str, Any]]] = None,
        metadata: Optional[Mapping[str, str]] = None,
        valid_from: Optional[Union[datetime, str]] = None,
        valid_to: Optional[Union[datetime, str]] = None,
        supersedes: Optional[str] = None,
    ) -> RememberResult:
        """Remembers a fact about a user; the same fact again reinforces it
        instead of adding a duplicate. ``valid_from`` and ``valid_to`` say
        when it was true in the world (a timezone-aware datetime or an RFC
        3339 string; ``valid_from`` defaults to now); ``supersedes`` names a
        fact it replaces, which is kept and closed at this one's
        ``valid_from`` (outcome ``"superseded"``, with ``previous``)."""
        if isinstance(source, FactSource):
            source = _drop_none(session_id=source.session_id, step_seq=source.step_seq, agent=source.agent)
        body = _drop_none(text=text, confidence=confidence, source=source, metadata=metadata,
                          valid_from=_rfc3339(valid_from, "valid_from"), valid_to=_rfc3339(valid_to, "valid_to"), supersedes=supersedes)
        return build(RememberResult, self._json("POST", "/v1/users/" + _quote(user_id) + "/facts", body=body))

    def extract_facts(
        self,
        user_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        source: Optional[Union[FactSource, Mapping[str, Any]]] = None,
    ) -> ExtractResult:
        """Has the server's model learn facts about a user from a
        conversation turn (``POST /v1/users/{user}/facts/extract``, mem0's
        ``add(messages)``): ``messages`` are OpenAI chat messages, typically
        the user's and the assistant's answer. Given the facts already
        known, the model adds new ones, reinforces those the turn confirms
        and supersedes those it contradicts, at once; the result lists each
        decision (``action``) with what it did (``outcome``) and the fact.
        ``source`` is recorded on the facts it adds. A server without a
        model raises :class:`~agentmem.NotConfiguredError`; a model that
        fails, :class:`~agentmem.ExtractionFailedError`, with nothing
        written. It is not retried: the same turn twice reinforces what it
        taught twice."""
        if isinstance(source, FactSource):
            source = _drop_none(session_id=source.session_id, step_seq=source.step_seq, agent=source.agent)
        body = _drop_none(messages=list(messages), source=source)
        return build(ExtractResult, self._json("POST", "/v1/users/" + _quote(user_id) + "/facts/extract", body=body))

    def search_facts(
        self,
        user_id: str,
        q: Optional[str] = None,
        *,
        k: Optional[int] = None,
        min_confidence: Optional[float] = None,
        include_superseded: Optional[bool] = None,
        as_of: Optional[Union[datetime, str]] = None,
        filter: Optional[Mapping[str, str]] = None,
    ) -> List[Fact]:
        """Returns a user's facts: with ``q`` or ``k``, the ``k`` most
        relevant to ``q`` (the most confident without ``q``); with neither,
        every fact, most confident first (:meth:`iter_facts`). Without
        ``as_of``, the facts that hold now; with it, those that held then
        (their ``effective_confidence`` is still the one now). ``filter``
        keeps the facts whose metadata has every pair."""
        if not q and k is None:
            return list(self.iter_facts(user_id, min_confidence=min_confidence, include_superseded=include_superseded, as_of=as_of, filter=filter))
        query = {"q": q, "k": k, "min_confidence": min_confidence, "include_superseded": include_superseded,
                 "as_of": _rfc3339(as_of, "as_of"), "filter": _pairs(filter)}
        out = self._json("GET", "/v1/users/" + _quote(user_id) + "/facts", query=query)
        self._damaged("fact", out)
        return [build(Fact, f) for f in out.get("facts") or []]

    def list_facts(
        self,
        user_id: str,
        *,
        min_confidence: Optional[float] = None,
        include_superseded: Optional[bool] = None,
        as_of: Optional[Union[datetime, str]] = None,
        filter: Optional[Mapping[str, str]] = None,
        page_size: Optional[int] = None,
        page_token: Optional[str] = None,
    ) -> FactsPage:
        """Lists one page of a user's facts, most confident first (at most
        ``page_size``, 100 by default); see :meth:`iter_facts` for all of
        them, and :meth:`search_facts` for ``as_of`` and ``filter``."""
        query = {"min_confidence": min_confidence, "include_superseded": include_superseded, "as_of": _rfc3339(as_of, "as_of"),
                 "filter": _pairs(filter), "page_size": page_size, "page_token": page_token}
        out = self._json("GET", "/v1/users/" + _quote(user_id) + "/facts", query=query)
        page = build(FactsPage, {k: v for k, v in out.items() if k != "damaged"})
        page.damaged = list(self._damaged("fact", out))  # the client's DamagedRecord, with its kind
        return page

    def iter_facts(
        self,
        user_id: str,
        *,
        min_confidence: Optional[float] = None,
        include_superseded: Optional[bool] = None,
        as_of: Optional[Union[datetime, str]] = None,
        filter: Optional[Mapping[str, str]] = None,
        page_size: Optional[int] = None,
    ) -> Iterator[Fact]:
        """Yields every fact of a user, most confident first, reading page
        after page."""
        token: Optional[str] = None
        while True:
            page = self.list_facts(user_id, min_confidence=min_confidence, include_superseded=include_superseded, as_of=as_of, filter=filter,
                                   page_size=page_size, page_token=token)
            yield from page.facts
            if not page.next_page_token:
                return
            token = page.next_page_token

    def get_fact(self, user_id: str, fact_id: str) -> FactHistory:
        """Returns a fact and the facts it superseded."""
        return build(FactHistory, self._json("GET", "/v1/users/" + _quote(user_id) + "/facts/" + _quote(fact_id)))

    def forget(self, user_id: str, fact_id: str, *, reason: Optional[str] = None) -> None:
        """Forgets a fact."""
        self.request("DELETE", "/v1/users/" + _quote(user_id) + "/facts/" + _quote(fact_id), query={"reason": reason})

    def forget_user(self, user_id: str, *, reason: Optional[str] = None) -> ForgetUserResponse:
        """Erases everything the tenant holds about a user: sessions,
        facts, memory blocks and recall documents. Safe to repeat: a retry
        after a failure erases what is left. Returns the counts erased."""
        return build(ForgetUserResponse, self._json("DELETE", "/v1/users/" + _quote(user_id), query={"reason": reason}))

    def update_fact(
        self,
        user_id: str,
        fact_id: str,
        *,
        text: Any = UNSET,
        confidence: Any = UNSET,
        metadata: Any = UNSET,
        valid_from: Any = UNSET,
        valid_to: Any = UNSET,
        reason: Optional[str] = None,
    ) -> Fact:
        """Changes a fact in place (a JSON merge patch): an argument left
        out is left as it is. ``metadata`` is merged (a key set to None is
        removed; ``metadata=None`` removes every key); ``valid_to=None``
        reopens the fact. The change goes into the fact's history
        (:meth:`fact_history`). Returns the fact as now recorded."""
        body: Dict[str, Any] = {}
        for name, value in (("text", text), ("confidence", confidence), ("metadata", metadata)):
            if value is not UNSET:
                body[name] = value
        for name, value in (("valid_from", valid_from), ("valid_to", valid_to)):
            if value is not UNSET:
                body[name] = None if value is None else _rfc3339(value, name)
        if reason is not None:
            body["reason"] = reason
        return build(Fact, self._json("PATCH", "/v1/users/" + _quote(user_id) + "/facts/" + _quote(fact_id), body=body))

    def fact_history(self, user_id: str, fact_id: str) -> List[FactChange]:
        """Returns every change of a fact, oldest first: added, updated,
        superseded, forgotten, with who, when, why, and what it said before
        and after (nothing of what a forgotten fact said)."""
        out = self._json("GET", "/v1/users/" + _quote(user_id) + "/facts/" + _quote(fact_id) + "/history")
        return [build(FactChange, c) for c in out.get("changes") or []]

    # --- memory blocks -----------------------------------------------------

    def list_blocks(self, *, user_id: Optional[str] = None, session_id: Optional[str] = None) -> List[Block]:
        """Returns the memory blocks of a user (``user_id``) or of a
        session (``session_id``), by label. Every block method takes
        exactly one of the two: a user's blocks are shown in every session
        of the user, a session's in that session only (and hide the user's
        of the same label)."""
        out = self._json("GET", _blocks_path(user_id, session_id))
        return [build(Block, b) for b in out.get("blocks") or []]

    def get_block(self, label: str, *, user_id: Optional[str] = None, session_id: Optional[str] = None) -> Block:
        """Returns a memory block; a missing one raises
        :class:`~agentmem.NotFoundError`."""
        return build(Block, self._json("GET", _blocks_path(user_id, session_id, label)))

    def put_block(
        self,
        label: str,
        value: str,
        *,
        user_id: Optional[str] = None,
        session_id: Optional[str] = None,
        limit: Optional[int] = None,
        description: Optional[str] = None,
        read_only: Optional[bool] = None,
        by: Optional[str] = None,
        if_match: Optional[int] = None,
    ) -> Block:
        """Creates a memory block or rewrites it whole, and returns it.
        ``limit`` is the most characters its value may hold (5,000 when
        created without one; left out, a rewrite keeps the block's);
        ``read_only`` refuses the agent's edits (``append_block``,
        ``replace_block`` and the memory tools), not this method's; ``by``
        is who the change is recorded as. ``if_match`` writes only if the
        block is still at that version (else
        :class:`~agentmem.ConflictError`). A value past the limit raises
        :class:`~agentmem.OverLimitError`."""
        body = _drop_none(value=value, limit=limit, description=description, read_only=read_only, by=by)
        return build(Block, self._json("PUT", _blocks_path(user_id, session_id, label), body=body, headers=_if_match(if_match)))

    def delete_block(self, label: str, *, user_id: Optional[str] = None, session_id: Optional[str] = None, if_match: Optional[int] = None) -> None:
        """Deletes a memory block and its history (``if_match`` as
        :meth:`put_block`)."""
        self.request("DELETE", _blocks_path(user_id, session_id, label), headers=_if_match(if_match))

    def append_block(
        self,
        label: str,
        text: str,
        *,
        user_id: Optional[str] = None,
        session_id: Optional[str] = None,
        by: Optional[str] = None,
        if_match: Optional[int] = None,
    ) -> Block:
        """Adds ``text`` at the end of a memory block, on a new line when
        the block is not empty, and returns the block. Past its limit it
        raises :class:`~agentmem.OverLimitError`; a read-only block
        :class:`~agentmem.ReadOnlyError`. Without ``if_match`` the append
        applies to whatever version the block has, and is not retried
        after a 503 (it could land twice)."""
        body = _drop_none(text=text, by=by)
        return build(Block, self._json("POST", _blocks_path(user_id, session_id, label) + "/append", body=body, headers=_if_match(if_match)))

    def replace_block(
        self,
        label: str,
        old: str,
        new: str,
        *,
        user_id: Optional[str] = None,
        session_id: Optional[str] = None,
        by: Optional[str] = None,
        if_match: Optional[int] = None,
    ) -> Block:
        """Replaces ``old``, which must occur exactly once in the memory
        block (else :class:`~agentmem.NoMatchError`), with ``new`` (which
        may be empty), and returns the block. Errors and ``if_match`` as
        :meth:`append_block`."""
        body = _drop_none(old=old, new=new, by=by)
        return build(Block, self._json("POST", _blocks_path(user_id, session_id, label) + "/replace", body=body, headers=_if_match(if_match)))

    def block_history(self, label: str, *, user_id: Optional[str] = None, session_id: Optional[str] = None) -> List[BlockChange]:
        """Returns the newest changes of a memory block (at most 100),
        oldest first: created, set, appended, replaced, with who, when,
        and the value before and after."""
        out = self._json("GET", _blocks_path(user_id, session_id, label) + "/history")
        return [build(BlockChange, c) for c in out.get("changes") or []]

    # --- operations --------------------------------------------------------

    def health(self) -> bool:
        """Reports whether the server is up (``/healthz``)."""
        return self._json("GET", "/healthz").get("status") == "ok"


def _drop_none(**kw: Any) -> Dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def _blocks_path(user_id: Optional[str], session_id: Optional[str], label: Optional[str] = None) -> str:
    """The path of the memory blocks of exactly one owner, a user or a
    session, and of one of them when label is given."""
    if (user_id is None) == (session_id is None):
        raise ValueError("give exactly one of user_id and session_id: the owner of the blocks")
    path = "/v1/users/" + _quote(user_id) if user_id is not None else "/v1/sessions/" + _quote(session_id or "")
    path += "/blocks"
    return path if label is None else path + "/" + _quote(label)


def _if_match(version: Optional[int]) -> Optional[Dict[str, str]]:
    """The If-Match header of an expected version, or None."""
    return {"If-Match": f'"{version}"'} if version is not None else None


def _rfc3339(value: Optional[Union[datetime, str]], name: str) -> Optional[str]:
    """Formats a time argument: a timezone-aware datetime, or an RFC 3339
    string passed as it is; None stays None."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValueError(f"{name} must be a timezone-aware datetime or an RFC 3339 string, not {value!r}")
    return value.isoformat()


def _pairs(md: Optional[Mapping[str, str]]) -> Optional[List[str]]:
    """The filter=key:value parameters of a metadata filter."""
    return [k + ":" + v for k, v in md.items()] if md else None


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Parses Retry-After: seconds, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def batches(items: Sequence[Any], size: int = MAX_BATCH) -> Iterable[Sequence[Any]]:
    """Splits a sequence into slices of at most size."""
    for i in range(0, len(items), size):
        yield items[i : i + size]
