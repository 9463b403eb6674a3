"""Decoding the API's JSON into the result dataclasses: RFC 3339 times, and
the builder behind the ``from_json`` of each class of :mod:`agentmem._wire`.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any, Callable, Dict, List, Mapping, Optional, Type, TypeVar

T = TypeVar("T")
Convert = Callable[[Any], Any]

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


def build(cls: Type[T], data: Optional[Mapping[str, Any]], convert: Mapping[str, Convert]) -> T:
    """Builds the dataclass cls from a JSON object: each member it has a
    field for (named by the field's ``json`` metadata, else the field's
    name), passed through ``convert[field name]`` unless it is null.
    Members it has no field for are ignored, so an older client keeps
    working with a newer server; members left out take the field's
    default."""
    data = data or {}
    kwargs: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        key = f.metadata.get("json", f.name)
        if key not in data:
            continue
        value = data[key]
        conv = convert.get(f.name)
        kwargs[f.name] = conv(value) if conv is not None and value is not None else value
    return cls(**kwargs)


def list_of(convert: Convert) -> Callable[[List[Any]], List[Any]]:
    """Converts each element of a JSON array (nulls stay None)."""
    return lambda values: [None if v is None else convert(v) for v in values]


def map_of(convert: Convert) -> Callable[[Mapping[str, Any]], Dict[str, Any]]:
    """Converts each value of a JSON object (nulls stay None)."""
    return lambda values: {k: None if v is None else convert(v) for k, v in values.items()}
