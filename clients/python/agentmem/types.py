"""The results of the agentmem client, as dataclasses.

Each is a response schema of the API (``/v1/openapi.json``), generated
from the server's OpenAPI document into :mod:`agentmem._wire` (run
``python3 clients/python/generate_types.py`` after changing it) and
exported here under the client's names; this module adds what the document
cannot say: the pinning constants, :func:`settings_json`, and the ``kind``
of a :class:`DamagedRecord`. Members the API adds later are ignored, so an
older client keeps working with a newer server. Times are timezone-aware
:class:`datetime.datetime` values. Messages, steps and items stay plain
JSON values (dicts and lists): their shapes are the chat APIs' own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Type, TypeVar, Union

from . import _wire
from ._decode import parse_time  # noqa: F401 (agentmem.types.parse_time, as before)
from ._wire import AutoCompact, Block, BlockChange, ContextBlock, DroppedRun, Fact, FactChange, FactSource, FactState, PendingCalls, Pinning, RecallDocument, RecallHit, Session

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
    "FactChange",
    "FactState",
    "FactsPage",
    "RememberResult",
    "ExtractResult",
    "ExtractedDecision",
    "FactHistory",
    "Block",
    "BlockChange",
    "ContextBlock",
]

T = TypeVar("T")

# The client's names of the API's response objects.
SessionPage = _wire.ListSessionsResponse
AppendResult = _wire.AppendResponse
StepsPage = _wire.ReadStepsResponse
PopResult = _wire.PopResponse
Context = _wire.ContextResponse
CompactResult = _wire.CompactResponse
FactsPage = _wire.FactsResponse
RememberResult = _wire.RememberResponse
ExtractResult = _wire.ExtractFactsResponse
ExtractedDecision = _wire.ExtractedDecision
FactHistory = _wire.FactResponse

#: The pinning of a session created without one: an agent run's
#: instructions, its task and the newest summary.
DEFAULT_PINNING = Pinning(system_prompts=True, first_task=True, summary=True)
#: A chat's pinning: its first question is one among many.
CHAT_PINNING = Pinning(system_prompts=True, summary=True)


def settings_json(value: Union[Pinning, AutoCompact, Mapping[str, Any], None]) -> Optional[Dict[str, Any]]:
    """The JSON of a setting given as its dataclass or as a mapping
    (passed as it is), ``None`` members left out."""
    if value is None:
        return None
    if isinstance(value, (Pinning, AutoCompact)):
        return {k: v for k, v in dataclasses.asdict(value).items() if v is not None}
    return dict(value)


@dataclasses.dataclass
class DamagedRecord(_wire.DamagedRecord):
    """A record a list or a search left out because its stored form does
    not decode (the server logs it; a read of it by ID fails with 500)."""

    #: ``"session"``, ``"fact"`` or ``"document"`` (a recall document): the
    #: client knows it from the list or search that left the record out.
    kind: str = ""


def build(cls: Type[T], data: Optional[Mapping[str, Any]]) -> T:
    """Builds a result dataclass from a JSON object (members it does not
    know are ignored)."""
    return cls.from_json(data)  # type: ignore[attr-defined,no-any-return]
