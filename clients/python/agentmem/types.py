"""The results of the agentmem client, as dataclasses.

Each mirrors a response schema of the API (``/v1/openapi.json``); members
the API adds later are ignored, so an older client keeps working with a
newer server. Times are timezone-aware :class:`datetime.datetime` values.
Messages, steps and items stay plain JSON values (dicts and lists): their
shapes are the chat APIs' own.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, Type, TypeVar, Union

__all__ = [
    "Pinning",
    "AutoCompact",
    "DEFAULT_PINNING",
    "CHAT_PINNING",
    "Session",
    "DamagedRecord",
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
    "FactsPage",
    "RememberResult",
    "FactHistory",
]

T = TypeVar("T")

_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def parse_time(value: Optional[str]) -> Optional[datetime]:
    """Parses an RFC 3339 time as the API writes it (``Z`` or an offset, up
    to nanoseconds, which Python's microseconds truncate)."""
    if not value:
        return None
    m = _TIME.match(value)
    if not m:
        raise ValueError(f"not an RFC 3339 time: {value!r}")
    frac = (m.group(2) or "")[:7]  # the dot and at most 6 digits
    if frac:
        frac = frac.ljust(7, "0")  # Python 3.9's fromisoformat wants 6
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(m.group(1) + frac + zone)


def _build(cls: Type[T], data: Optional[Mapping[str, Any]]) -> T:
    """Builds a dataclass from a JSON object: known members only, times
    parsed, nested results built."""
    data = data or {}
    kwargs: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        v = data[f.name]
        conv = f.metadata.get("conv")
        kwargs[f.name] = conv(v) if conv is not None and v is not None else v
    return cls(**kwargs)


def _time_field(**kw: Any) -> Any:
    return dataclasses.field(default=None, metadata={"conv": parse_time}, **kw)


def _list_of(cls: Type[Any]) -> Any:
    return dataclasses.field(default_factory=list, metadata={"conv": lambda v: [_build(cls, x) for x in v]})


def _one(cls: Type[Any]) -> Any:
    return dataclasses.field(default=None, metadata={"conv": lambda v: _build(cls, v)})


@dataclasses.dataclass(frozen=True)
class Pinning:
    """What a session's contexts always show, whatever the budget, and its
    compactions keep (the API's ``pinning``). Fields left out are false."""

    #: Every system prompt.
    system_prompts: bool = False
    #: The first task: an agent run's task, a chat's first user message.
    first_task: bool = False
    #: Every task (every user message).
    tasks: bool = False
    #: The newest summary of what the context no longer shows.
    summary: bool = False


#: The pinning of a session created without one: an agent run's
#: instructions, its task and the newest summary.
DEFAULT_PINNING = Pinning(system_prompts=True, first_task=True, summary=True)
#: A chat's pinning: its first question is one among many.
CHAT_PINNING = Pinning(system_prompts=True, summary=True)


@dataclasses.dataclass(frozen=True)
class AutoCompact:
    """A session's automatic compaction (the API's ``auto_compact``): when
    its working set costs more than ``max_tokens``, the server summarizes
    its oldest turns down to ``target_tokens``. Zero and ``None`` fields
    take the server's defaults (half of ``max_tokens``; 6 recent steps;
    the LLM summarizer when the server has one), which the session then
    shows."""

    max_tokens: int
    target_tokens: int = 0
    keep_recent: int = 0
    #: ``"extractive"`` or ``"llm"``.
    summarizer: Optional[str] = None


def settings_json(value: Union[Pinning, AutoCompact, Mapping[str, Any], None]) -> Optional[Dict[str, Any]]:
    """The JSON of a setting given as its dataclass or as a mapping
    (passed as it is), ``None`` members left out."""
    if value is None:
        return None
    if isinstance(value, (Pinning, AutoCompact)):
        return {k: v for k, v in dataclasses.asdict(value).items() if v is not None}
    return dict(value)


@dataclasses.dataclass
class Session:
    """A session's metadata (``GET /v1/sessions/{id}``)."""

    id: str
    retention: str = "session"
    created_at: Optional[datetime] = _time_field()
    updated_at: Optional[datetime] = _time_field()
    #: The sequence number of the newest entry of the session's log.
    last_seq: int = 0
    tenant: Optional[str] = None
    user_id: Optional[str] = None
    agent: Optional[str] = None
    #: For a branch: the session it was forked from, and where.
    parent_id: Optional[str] = None
    fork_seq: Optional[int] = None
    metadata: Dict[str, str] = dataclasses.field(default_factory=dict)
    expires_at: Optional[datetime] = _time_field()
    #: What the session's contexts pin, as it applies (``None`` only for
    #: sessions older than settings, which pin :data:`DEFAULT_PINNING`).
    pinning: Optional[Pinning] = _one(Pinning)
    #: Its automatic compaction, with the defaults filled in; ``None``:
    #: none.
    auto_compact: Optional[AutoCompact] = _one(AutoCompact)


@dataclasses.dataclass
class DamagedRecord:
    """A record a list or a search left out because its stored form does
    not decode (the server logs it; a read of it by ID fails with 500)."""

    id: str
    #: Why it does not decode.
    error: str = ""
    #: ``"session"``, ``"fact"`` or ``"document"`` (a recall document).
    kind: str = ""


@dataclasses.dataclass
class SessionPage:
    """A page of sessions, newest first; ``next_page_token`` is ``None`` on
    the last page."""

    sessions: List[Session] = _list_of(Session)
    #: The sessions of the page whose stored record is damaged: left out
    #: of ``sessions``, they take their places in the page.
    damaged: List[DamagedRecord] = _list_of(DamagedRecord)
    next_page_token: Optional[str] = None


@dataclasses.dataclass
class AppendResult:
    """What an append stored (steps, messages or items)."""

    #: The sequence numbers of the new steps, in order (for a retried
    #: request, those it was stored under).
    seqs: List[int] = dataclasses.field(default_factory=list)
    #: The session's last sequence number after the append (its ETag).
    last_seq: int = 0
    #: The compaction entry of the append, if it had one (such as the
    #: amendment that records tool results for earlier calls).
    compaction_seq: Optional[int] = None
    #: The earlier pending actions the request's tool results answered.
    updated: List[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class StepsPage:
    """Entries of a session's log (``GET /steps``), oldest first."""

    #: The steps, in agentmem's typed step JSON.
    steps: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    #: The compaction entries among them.
    compactions: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    last_seq: int = 0


@dataclasses.dataclass
class PopResult:
    """The message a pop took off the end of the working set."""

    #: The sequence number of the step it belonged to.
    seq: int
    #: The message, as an OpenAI chat message.
    message: Dict[str, Any]
    #: True when the whole step left the working set; False when the
    #: message was one tool result, whose call is pending again.
    removed: bool
    compaction_seq: int = 0
    last_seq: int = 0
    #: Set when the message is a tool result recorded as an error.
    is_error: bool = False
    #: The message's metadata, as appended: a tool result's own (with
    #: ``is_error`` ``"true"`` for an error result), else its step's.
    metadata: Dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class PendingCalls:
    """An action whose tool calls await results (left out of the context)."""

    seq: int
    tool_call_ids: List[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class DroppedRun:
    """A run of working-set steps a context left out."""

    first: int
    last: int
    count: int


@dataclasses.dataclass
class FactSource:
    """Where a fact was learnt."""

    session_id: Optional[str] = None
    step_seq: Optional[int] = None
    agent: Optional[str] = None


@dataclasses.dataclass
class Fact:
    """A fact about a user."""

    id: str
    user_id: str
    text: str
    confidence: float
    #: The confidence after decay, as of the request.
    effective_confidence: float = 0.0
    created_at: Optional[datetime] = _time_field()
    reinforced_at: Optional[datetime] = _time_field()
    tenant: Optional[str] = None
    relevance: Optional[float] = None
    score: Optional[float] = None
    reinforcements: int = 0
    source: Optional[FactSource] = _one(FactSource)
    superseded_by: Optional[str] = None
    superseded_at: Optional[datetime] = _time_field()
    metadata: Dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class FactsPage:
    """A page of a user's facts, most confident first
    (:meth:`~agentmem.Client.list_facts`); ``next_page_token`` is ``None``
    on the last page."""

    facts: List[Fact] = _list_of(Fact)
    #: The user's facts left out because their stored form is damaged.
    damaged: List[DamagedRecord] = _list_of(DamagedRecord)
    next_page_token: Optional[str] = None


@dataclasses.dataclass
class Context:
    """What the model should see (``GET /context``): messages that fit the
    budget, and what was left out."""

    #: The messages, in the format asked for: a list of chat messages, or
    #: for Anthropic an object with ``system`` and ``messages``.
    messages: Union[List[Dict[str, Any]], Dict[str, Any]]
    format: str = "openai"
    tokenizer: str = ""
    budget: int = 0
    max_context_tokens: int = 0
    #: The tokens the messages cost, reply priming included.
    tokens: int = 0
    #: The numbers of the steps shown.
    steps: List[int] = dataclasses.field(default_factory=list)
    dropped: List[DroppedRun] = _list_of(DroppedRun)
    dropped_steps: int = 0
    truncated: List[int] = dataclasses.field(default_factory=list)
    summarized: List[Dict[str, int]] = dataclasses.field(default_factory=list)
    #: Actions left out because their tool calls await results.
    pending: List[PendingCalls] = _list_of(PendingCalls)
    last_seq: int = 0
    #: The facts injected into the system prompt, with ``facts=N``.
    facts: List[Fact] = _list_of(Fact)


@dataclasses.dataclass
class CompactResult:
    """What a compaction changed in the working set."""

    changed: bool
    removed: List[int] = dataclasses.field(default_factory=list)
    replaced: List[int] = dataclasses.field(default_factory=list)
    added: List[int] = dataclasses.field(default_factory=list)
    summary: Optional[str] = None
    before: int = 0
    after: int = 0
    last_seq: int = 0


@dataclasses.dataclass
class RecallDocument:
    """A document of the recall index (a conversation turn, or one of yours)."""

    id: str
    text: str
    metadata: Dict[str, str] = dataclasses.field(default_factory=dict)
    time: Optional[datetime] = _time_field()
    group: Optional[str] = None
    seq: Optional[int] = None


@dataclasses.dataclass
class RecallHit(RecallDocument):
    """A recall search hit."""

    #: Higher is better; compares only within one search.
    score: float = 0.0
    #: The session and step of a conversation turn.
    session_id: Optional[str] = None
    step: Optional[int] = None
    #: The hit with its neighbouring turns, in order (``before``/``after``).
    window: List[RecallDocument] = _list_of(RecallDocument)


@dataclasses.dataclass
class RememberResult:
    """What remembering a fact did: ``outcome`` is ``"added"`` (a new
    fact), ``"reinforced"`` (the same fact again), ``"superseded"`` or
    ``"ignored"``; ``fact`` is the fact now."""

    outcome: str
    fact: Fact = _one(Fact)


@dataclasses.dataclass
class FactHistory:
    """A fact and the facts it superseded."""

    fact: Fact = _one(Fact)
    history: List[Fact] = _list_of(Fact)


def build(cls: Type[T], data: Optional[Mapping[str, Any]]) -> T:
    """Builds a result dataclass from a JSON object (members it does not
    know are ignored)."""
    return _build(cls, data)
