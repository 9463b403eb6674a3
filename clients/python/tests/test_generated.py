"""agentmem/_wire.py is what generate_types.py makes of server/openapi.json,
and what it makes decodes the API's JSON as the client's results do."""

from __future__ import annotations

import copy
import dataclasses
import difflib
import importlib.util
import json
import sys
import types
import unittest
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict

import agentmem
from agentmem import _wire

from ._server import REPO

HERE = Path(__file__).resolve().parents[1]
SPEC = REPO / "server" / "openapi.json"


def load_generator() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("generate_types", HERE / "generate_types.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def load_source(source: str) -> types.ModuleType:
    """Runs generated source as a module of the agentmem package (it imports
    agentmem._decode)."""
    module = types.ModuleType("agentmem._wire_under_test")
    module.__package__ = "agentmem"
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, "<generated>", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


class CurrentTest(unittest.TestCase):
    def test_wire_is_generated_from_openapi(self) -> None:
        """_wire.py is what server/openapi.json generates: a change to the
        API fails here until the types are regenerated."""
        want = gen.generate(json.loads(SPEC.read_text("utf-8")))
        have = (HERE / "agentmem" / "_wire.py").read_text("utf-8")
        if have != want:
            diff = "".join(list(difflib.unified_diff(have.splitlines(True), want.splitlines(True), "agentmem/_wire.py", "generated"))[:80])
            self.fail(
                "clients/python/agentmem/_wire.py is not what server/openapi.json generates; "
                "regenerate it with `python3 clients/python/generate_types.py` and commit it:\n" + diff
            )

    def test_a_change_to_the_document_changes_the_types(self) -> None:
        """The comparison above can fail: a member added to a response
        schema, or a description changed, changes what is generated."""
        spec = json.loads(SPEC.read_text("utf-8"))
        before = gen.generate(spec)
        added = copy.deepcopy(spec)
        added["components"]["schemas"]["Session"]["properties"]["colour"] = {"type": "string", "description": "Its colour."}
        after = gen.generate(added)
        self.assertNotEqual(before, after)
        self.assertIn("    #: Its colour.\n    colour: Optional[str] = None\n", after)
        reworded = copy.deepcopy(spec)
        reworded["components"]["schemas"]["Fact"]["properties"]["confidence"]["description"] = "How sure."
        self.assertNotEqual(before, gen.generate(reworded))

    def test_client_names(self) -> None:
        """agentmem's result names are the generated classes (aliased where
        the schema's name differs)."""
        for name, schema in [
            ("Session", "Session"),
            ("SessionPage", "ListSessionsResponse"),
            ("AppendResult", "AppendResponse"),
            ("StepsPage", "ReadStepsResponse"),
            ("PopResult", "PopResponse"),
            ("Context", "ContextResponse"),
            ("CompactResult", "CompactResponse"),
            ("RecallDocument", "RecallDocument"),
            ("RecallHit", "RecallHit"),
            ("Fact", "Fact"),
            ("FactSource", "FactSource"),
            ("FactsPage", "FactsResponse"),
            ("RememberResult", "RememberResponse"),
            ("FactHistory", "FactResponse"),
            ("Pinning", "Pinning"),
            ("AutoCompact", "AutoCompact"),
            ("PendingCalls", "PendingCalls"),
            ("DroppedRun", "DroppedRun"),
            ("Block", "Block"),
            ("BlockChange", "BlockChange"),
            ("ContextBlock", "ContextBlock"),
        ]:
            self.assertIs(getattr(agentmem, name), getattr(_wire, schema), name)
        self.assertTrue(issubclass(agentmem.DamagedRecord, _wire.DamagedRecord))
        self.assertTrue(issubclass(agentmem.RecallHit, agentmem.RecallDocument))


class DecodeTest(unittest.TestCase):
    """The generated classes decode the API's JSON."""

    def test_session(self) -> None:
        s = agentmem.Session.from_json(
            {
                "id": "s1",
                "retention": "session",
                "created_at": "2025-01-02T03:04:05.123456789Z",
                "updated_at": "2025-01-02T05:04:05+02:00",
                "last_seq": 7,
                "metadata": {"team": "a"},
                "pinning": {"system_prompts": True, "summary": True},
                "auto_compact": {"max_tokens": 8000, "target_tokens": 4000},
                "member_of_a_newer_server": {"x": 1},
            }
        )
        utc = timezone.utc
        self.assertEqual(s.created_at, datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=utc))
        self.assertEqual(s.updated_at, datetime(2025, 1, 2, 3, 4, 5, tzinfo=utc))
        self.assertEqual(s.updated_at.utcoffset(), timedelta(hours=2))  # type: ignore[union-attr]
        self.assertEqual(s.pinning, agentmem.CHAT_PINNING)
        self.assertEqual(s.auto_compact, agentmem.AutoCompact(max_tokens=8000, target_tokens=4000))
        self.assertEqual((s.id, s.last_seq, s.metadata, s.user_id, s.expires_at), ("s1", 7, {"team": "a"}, None, None))
        self.assertFalse(hasattr(s, "member_of_a_newer_server"))
        with self.assertRaises(dataclasses.FrozenInstanceError):
            s.pinning.tasks = True  # type: ignore[misc,union-attr]

    def test_left_out_members_take_defaults(self) -> None:
        """The API leaves out empty lists and false booleans; a server older
        than a member does not send it."""
        r = agentmem.AppendResult.from_json({"seqs": [1], "last_seq": 1})
        self.assertEqual((r.updated, r.compaction_seq), ([], None))
        p = agentmem.PopResult.from_json({"seq": 3, "message": {"role": "user", "content": "hi"}, "removed": True})
        self.assertEqual((p.is_error, p.metadata, p.message["content"]), (False, {}, "hi"))
        self.assertEqual(agentmem.Session.from_json(None), agentmem.Session())

    def test_nested(self) -> None:
        ctx = agentmem.Context.from_json(
            {
                "messages": [{"role": "system", "content": "x"}],
                "dropped": [{"first": 2, "last": 4, "count": 3}],
                "summarized": [{"from": 1, "to": 5}],
                "pending": [{"seq": 9, "tool_call_ids": ["c1"]}],
                "facts": [{"id": "f1", "user_id": "u", "text": "t", "confidence": 0.5, "reinforced_at": "2025-01-02T03:04:05Z"}],
            }
        )
        self.assertEqual(ctx.dropped, [agentmem.DroppedRun(first=2, last=4, count=3)])
        self.assertEqual(ctx.summarized, [{"from": 1, "to": 5}])
        self.assertEqual(ctx.pending[0].tool_call_ids, ["c1"])
        self.assertIsInstance(ctx.facts[0], agentmem.Fact)
        self.assertEqual(ctx.facts[0].reinforced_at, datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
        hit = agentmem.RecallHit.from_json(
            {"id": "d", "text": "t", "score": 1.5, "time": "2025-01-02T03:04:05Z", "window": [{"id": "w", "text": "u", "time": "2025-01-02T03:04:06Z"}]}
        )
        self.assertEqual(hit.window[0].time, datetime(2025, 1, 2, 3, 4, 6, tzinfo=timezone.utc))
        self.assertEqual((hit.score, hit.time.second), (1.5, 5))  # type: ignore[union-attr]

    def test_bad_time(self) -> None:
        with self.assertRaises(ValueError):
            agentmem.Fact.from_json({"created_at": "yesterday"})


# A document with one of each construct the generator maps.
TOY: Dict[str, Any] = {
    "openapi": "3.1.0",
    "paths": {
        "/things/{id}": {
            "get": {
                "summary": "Get a thing",
                "responses": {
                    "200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
                    "404": {"$ref": "#/components/responses/NotFound"},
                },
            },
            "post": {"responses": {"201": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/BigThing"}}}}}},
        }
    },
    "components": {
        "schemas": {
            "Thing": {
                "type": "object",
                "description": "A thing.",
                "required": ["name", "when", "part", "maybe"],
                "properties": {
                    "count": {"type": "integer", "description": "How many."},
                    "name": {"type": "string"},
                    "when": {"type": "string", "format": "date-time"},
                    "part": {"$ref": "#/components/schemas/Part"},
                    "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
                    "by_name": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Part"}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "flag": {"type": "boolean"},
                    "size": {"type": "number", "default": 1.5},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                    "message": {"$ref": "#/components/schemas/Message"},
                    "span": {"type": "object", "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}}},
                    "runs": {"type": "array", "items": {"type": "object", "properties": {"first": {"type": "integer"}}}},
                    "anything": {},
                    "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                    "from": {"type": "string"},
                    "maybe": {"type": ["string", "null"]},
                },
            },
            "Part": {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}},
            "Message": {"type": "object", "properties": {"role": {"type": "string"}}},
            "BigThing": {"allOf": [{"$ref": "#/components/schemas/Thing"}, {"type": "object", "required": ["weight"], "properties": {"weight": {"type": "number"}}}]},
            "Unused": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
    },
}
TOY_CONFIG: Dict[str, Any] = {"json_schemas": frozenset({"Message"}), "inline_classes": {"Thing.runs": "Run"}, "frozen": frozenset({"Part"})}


class GeneratorTest(unittest.TestCase):
    """What generate_types.py makes of each construct."""

    def setUp(self) -> None:
        self.source = gen.generate(TOY, **TOY_CONFIG)
        self.mod = load_source(self.source)

    def test_fields(self) -> None:
        src = self.source
        for decl in [
            # Required members first, defaulting to their type's zero (or
            # None when it has none), then the others.
            '    name: str = ""\n',
            "    when: Optional[datetime] = None\n",
            "    part: Optional[Part] = None\n",
            "    maybe: Optional[str] = None\n",
            "    #: How many.\n    count: Optional[int] = None\n",
            "    parts: List[Part] = dataclasses.field(default_factory=list)\n",
            "    by_name: Dict[str, Part] = dataclasses.field(default_factory=dict)\n",
            "    labels: Dict[str, str] = dataclasses.field(default_factory=dict)\n",
            "    flag: bool = False\n",
            "    size: float = 1.5\n",
            '    #: One of ``"a"``, ``"b"``.\n    kind: Optional[str] = None\n',
            "    message: Dict[str, Any] = dataclasses.field(default_factory=dict)\n",
            "    span: Dict[str, int] = dataclasses.field(default_factory=dict)\n",
            "    runs: List[Run] = dataclasses.field(default_factory=list)\n",
            "    anything: Any = None\n",
            "    either: Optional[Union[str, int]] = None\n",
            '    from_: Optional[str] = dataclasses.field(default=None, metadata={"json": "from"})\n',
            "class BigThing(Thing):\n",
            "    weight: float = 0.0\n",
            "@dataclasses.dataclass(frozen=True)\nclass Part:\n",
            "    The answer of ``GET /things/{id}`` (Get a thing).\n",
        ]:
            self.assertIn(decl, src)
        self.assertLess(src.index("    name: str"), src.index("    count:"))
        self.assertLess(src.index("class Thing"), src.index("class BigThing"))
        self.assertNotIn("class Unused", src)
        self.assertNotIn("class Message", src)
        self.assertEqual(self.mod.__all__, ["Run", "Thing", "Part", "BigThing"])
        compile(src, "<generated>", "exec")

    def test_from_json(self) -> None:
        m = self.mod
        t = m.BigThing.from_json(
            {
                "name": "n",
                "when": "2025-01-02T03:04:05.5Z",
                "part": {"at": "2025-01-02T03:04:05Z", "future": 1},
                "parts": [{"at": None}, None],
                "by_name": {"p": {}},
                "message": {"role": "user", "extra": [1]},
                "runs": [{"first": 3}],
                "from": "there",
                "weight": 2.5,
                "future": True,
            }
        )
        self.assertIsInstance(t, m.Thing)
        self.assertEqual(t.when, datetime(2025, 1, 2, 3, 4, 5, 500000, tzinfo=timezone.utc))
        self.assertEqual(t.part, m.Part(at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)))
        self.assertEqual(t.parts, [m.Part(), None])
        self.assertEqual(t.by_name, {"p": m.Part()})
        self.assertEqual(t.message, {"role": "user", "extra": [1]})
        self.assertEqual(t.runs, [m.Run(first=3)])
        self.assertEqual((t.from_, t.weight, t.size, t.flag, t.count), ("there", 2.5, 1.5, False, None))

    def test_unsupported(self) -> None:
        """A construct the generator does not map fails it, naming where."""
        bad = copy.deepcopy(TOY)
        bad["components"]["schemas"]["Thing"]["properties"]["odd"] = {"type": "tuple"}
        with self.assertRaisesRegex(gen.GenerateError, r"Thing\.odd: type 'tuple'"):
            gen.generate(bad, **TOY_CONFIG)
        with self.assertRaisesRegex(gen.GenerateError, "names schema Gone"):
            gen.generate(TOY, **dict(TOY_CONFIG, json_schemas=frozenset({"Gone"})))
        with self.assertRaisesRegex(gen.GenerateError, "Thing.nothing"):
            gen.generate(TOY, **dict(TOY_CONFIG, inline_classes={"Thing.nothing": "X"}))
        with self.assertRaisesRegex(gen.GenerateError, "would both be class Part"):
            gen.generate(TOY, **dict(TOY_CONFIG, inline_classes={"Thing.runs": "Part"}))


if __name__ == "__main__":
    unittest.main()
