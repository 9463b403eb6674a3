"""The blocking client against the real server: every method, and the
errors each refusal maps to."""

from __future__ import annotations

import os
import re
import sqlite3
import unittest
from datetime import datetime, timezone

import agentmem

from ._model import Model
from ._server import REPO, Server, server, unique


def setUpModule() -> None:
    server()


def call(cid: str, name: str = "read_file", args: str = '{"path":"main.go"}') -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


class SessionsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = agentmem.Client(server().url)

    def test_create_get_list_fork_delete(self) -> None:
        user = unique("alice")
        sid = unique("s")
        s = self.c.create_session(sid, user_id=user, agent="coder", metadata={"team": "a"}, retention="persistent")
        self.assertEqual((s.id, s.user_id, s.agent, s.metadata, s.retention, s.last_seq), (sid, user, "coder", {"team": "a"}, "persistent", 0))
        self.assertIsInstance(s.created_at, datetime)
        self.assertIsNotNone(s.created_at.tzinfo)
        self.assertEqual(self.c.get_session(sid), s)

        generated = self.c.create_session(user_id=user, ttl_seconds=3600)
        self.assertTrue(generated.id)
        self.assertIsInstance(generated.expires_at, datetime)

        with self.assertRaises(agentmem.ConflictError) as cm:
            self.c.create_session(sid)
        self.assertEqual(cm.exception.status, 409)

        self.c.append_messages(sid, [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"}])
        branch = self.c.fork_session(sid, at_seq=1, new_id=unique("branch"), metadata={"why": "try"})
        self.assertEqual((branch.parent_id, branch.fork_seq, branch.user_id, branch.metadata), (sid, 1, user, {"why": "try"}))

        page = self.c.list_sessions(user_id=user, page_size=2)
        self.assertEqual(len(page.sessions), 2)
        self.assertTrue(page.next_page_token)
        everything = list(self.c.iter_sessions(user_id=user, page_size=1))
        self.assertEqual({x.id for x in everything}, {sid, generated.id, branch.id})
        self.assertEqual(everything[0].id, branch.id)  # newest first

        self.c.delete_session(sid)
        with self.assertRaises(agentmem.NotFoundError) as cm2:
            self.c.get_session(sid)
        self.assertEqual((cm2.exception.status, cm2.exception.code), (404, "not_found"))
        self.assertEqual(self.c.get_session(branch.id).parent_id, sid)

    def test_settings(self) -> None:
        sid = unique("chat")
        s = self.c.create_session(sid, pinning=agentmem.CHAT_PINNING, auto_compact=agentmem.AutoCompact(max_tokens=8000))
        self.assertEqual(s.pinning, agentmem.Pinning(system_prompts=True, summary=True))
        self.assertEqual(s.auto_compact, agentmem.AutoCompact(max_tokens=8000, target_tokens=4000, keep_recent=6, summarizer="extractive"))
        self.assertEqual(self.c.get_session(sid), s)
        # Plain mappings do too; members left out of a pinning are false.
        run = self.c.create_session(unique("run"), pinning={"tasks": True}, auto_compact={"max_tokens": 100, "target_tokens": 10})
        self.assertEqual(run.pinning, agentmem.Pinning(tasks=True))
        self.assertEqual((run.auto_compact.target_tokens, run.auto_compact.keep_recent), (10, 6))
        # Without them: the default pinning, no automatic compaction.
        plain = self.c.create_session(unique("plain"))
        self.assertEqual((plain.pinning, plain.auto_compact), (agentmem.DEFAULT_PINNING, None))
        # A fork takes its parent's unless it gives its own.
        self.c.append_messages(sid, {"role": "user", "content": "hi"})
        self.assertEqual(self.c.fork_session(sid, new_id=unique("b")).pinning, agentmem.CHAT_PINNING)
        own = self.c.fork_session(sid, new_id=unique("b"), pinning=agentmem.Pinning(first_task=True), auto_compact={"max_tokens": 50})
        self.assertEqual((own.pinning, own.auto_compact.max_tokens), (agentmem.Pinning(first_task=True), 50))
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            self.c.create_session(unique("bad"), auto_compact=agentmem.AutoCompact(max_tokens=100, target_tokens=100))
        self.assertEqual((cm.exception.field, cm.exception.status), ("auto_compact.target_tokens", 400))

    def test_bad_input(self) -> None:
        for bad in ("..", "a\nb"):
            with self.assertRaises(agentmem.InvalidRequestError) as cm:
                self.c.create_session(bad)
            self.assertEqual((cm.exception.field, cm.exception.status), ("id", 400))
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            self.c.list_sessions(page_size=-1)
        self.assertEqual(cm.exception.field, "page_size")
        with self.assertRaises(ValueError):
            agentmem.Client("localhost:8080")

    def test_health(self) -> None:
        self.assertTrue(self.c.health())

    def test_any_session_id(self) -> None:
        # A session ID is any text without control characters (a
        # conversation keyed by an e-mail address, an agent's name): the
        # client percent-encodes it as a path segment.
        suffix = unique("")
        for sid in ("user@example.com" + suffix, "Research Agent" + suffix, "a/b ü?x=1#frag%" + suffix, "../x" + suffix):
            s = self.c.create_session(sid, user_id=sid)
            self.assertEqual((s.id, self.c.get_session(sid).id), (sid, sid))
            self.c.append_messages(sid, [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])
            self.assertEqual(self.c.get_context(sid).last_seq, 2)
            self.assertEqual(len(self.c.read_steps(sid).steps), 2)
            branch = self.c.fork_session(sid, new_id=sid + " (branch)")
            self.assertEqual((branch.id, branch.parent_id), (sid + " (branch)", sid))
            self.assertEqual(self.c.pop_message(sid).message["content"], "hi")
            self.c.add_items(sid, [{"role": "user", "content": "again"}])
            self.assertEqual(len(self.c.get_items(sid)), 2)
            self.c.compact(sid, "keep_last_n", n=1)
            self.assertEqual({x.id for x in self.c.iter_sessions(user_id=sid)}, {sid, branch.id})
            self.assertEqual([x.id for x in self.c.iter_sessions(parent_id=sid)], [branch.id])
            self.c.delete_session(branch.id)
            self.c.delete_session(sid)
            with self.assertRaises(agentmem.NotFoundError):
                self.c.get_session(sid)


class WritesTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = agentmem.Client(server().url)
        self.sid = unique("w")
        self.c.create_session(self.sid, user_id=unique("u"))

    def test_messages_item_by_item_and_pop(self) -> None:
        r = self.c.append_messages(self.sid, [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is in main.go?"}])
        self.assertEqual((r.seqs, r.last_seq), ([1, 2], 2))
        # The call before its result, as frameworks save them.
        r = self.c.append_messages(self.sid, {"role": "assistant", "content": None, "tool_calls": [call("c1")]})
        self.assertEqual(r.seqs, [3])
        ctx = self.c.get_context(self.sid)
        self.assertEqual([(p.seq, p.tool_call_ids) for p in ctx.pending], [(3, ["c1"])])
        self.assertNotIn("c1", str(ctx.messages))

        # The result, with a key; the same request again is a retry.
        r = self.c.append_messages(self.sid, {"role": "tool", "tool_call_id": "c1", "content": "package main"}, idempotency_key="res-1")
        self.assertEqual((r.updated, r.last_seq), ([3], 4))
        self.assertEqual(r.compaction_seq, 4)
        again = self.c.append_messages(self.sid, {"role": "tool", "tool_call_id": "c1", "content": "package main"}, idempotency_key="res-1")
        self.assertEqual(again.last_seq, 4)
        with self.assertRaises(agentmem.ToolResultConflictError) as cm:
            self.c.append_messages(self.sid, {"role": "tool", "tool_call_id": "c1", "content": "other"})
        self.assertIsInstance(cm.exception, agentmem.ConflictError)
        with self.assertRaises(agentmem.InvalidRequestError) as cm2:
            self.c.append_messages(self.sid, {"role": "tool", "tool_call_id": "nobody", "content": "x"})
        self.assertEqual(cm2.exception.field, "tool_call_id")

        # A key reused for another body.
        self.c.append_messages(self.sid, {"role": "assistant", "content": "It is a Go program."}, idempotency_key="turn-9")
        with self.assertRaises(agentmem.IdempotencyKeyReusedError) as cm3:
            self.c.append_messages(self.sid, {"role": "assistant", "content": "Something else."}, idempotency_key="turn-9")
        self.assertEqual(cm3.exception.field, "Idempotency-Key")

        # If-Match.
        with self.assertRaises(agentmem.ConflictError) as cm4:
            self.c.append_messages(self.sid, {"role": "user", "content": "x"}, if_match=1)
        self.assertEqual(cm4.exception.last_seq, 5)
        self.assertEqual(self.c.append_messages(self.sid, {"role": "user", "content": "Thanks"}, if_match=5).last_seq, 6)

        # Pop: the user message, the answer, then the tool result (its
        # call pending again).
        p = self.c.pop_message(self.sid)
        self.assertEqual((p.message["role"], p.message["content"], p.removed), ("user", "Thanks", True))
        self.c.pop_message(self.sid, if_match=p.last_seq)
        p = self.c.pop_message(self.sid)
        self.assertEqual((p.seq, p.message["role"], p.message["tool_call_id"], p.removed), (3, "tool", "c1", False))
        self.assertEqual([x.tool_call_ids for x in self.c.get_context(self.sid).pending], [["c1"]])
        with self.assertRaises(agentmem.ConflictError):
            self.c.pop_message(self.sid, if_match=1)

        log = self.c.read_steps(self.sid)
        self.assertEqual([s["type"] for s in log.steps], ["system_prompt", "task", "action", "action", "task"])
        self.assertGreater(len(log.compactions), 0)
        tail = self.c.read_steps(self.sid, last=3)
        self.assertEqual(len(tail.steps) + len(tail.compactions), 3)
        self.assertEqual([s["number"] for s in self.c.read_steps(self.sid, after=1, limit=2).steps], [2, 3])

        for _ in range(3):
            self.c.pop_message(self.sid)
        with self.assertRaises(agentmem.NothingToPopError) as cm5:
            self.c.pop_message(self.sid)
        self.assertEqual(cm5.exception.code, "nothing_to_pop")

    def test_tool_result_metadata_and_images(self) -> None:
        # A tool result's metadata and images (a screenshot) are kept, and
        # pop gives them back.
        self.c.append_messages(self.sid, [{"role": "user", "content": "What does the page show?"},
                                          {"role": "assistant", "content": None, "tool_calls": [call("c2", "screenshot", "{}")]}])
        shot = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        self.c.append_messages(self.sid, {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "the page"}, shot], "metadata": {"source": "browser"}})
        ctx = self.c.get_context(self.sid, format="anthropic")
        self.assertIn("iVBORw0KGgo=", str(ctx.messages))
        p = self.c.pop_message(self.sid)
        self.assertEqual((p.message["tool_call_id"], p.message["content"][1], p.metadata), ("c2", shot, {"source": "browser"}))

    def test_steps_context_and_compaction(self) -> None:
        steps = [
            {"type": "system_prompt", "content": "You are a careful coding agent."},
            {"type": "task", "task": "Fix the failing test."},
        ]
        for i in range(6):
            steps.append({"type": "action", "model_output": f"Step {i}", "tool_calls": [call(f"c{i}")], "results": [{"call_id": f"c{i}", "content": "x" * 400}]})
        r = self.c.append_steps(self.sid, steps, idempotency_key="batch-1")
        self.assertEqual(r.seqs, list(range(1, 9)))
        self.assertEqual(self.c.append_steps(self.sid, steps, idempotency_key="batch-1").seqs, r.seqs)
        self.assertEqual(self.c.append_steps(self.sid, {"type": "final_answer", "answer": "done"}).seqs, [9])
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            self.c.append_steps(self.sid, {"type": "nonsense"})
        self.assertEqual(cm.exception.field, "type")

        full = self.c.get_context(self.sid)
        self.assertEqual((full.format, full.dropped_steps, full.last_seq), ("openai", 0, 9))
        self.assertEqual(full.messages[0], {"role": "system", "content": "You are a careful coding agent."})
        small = self.c.get_context(self.sid, budget=200, tokenizer="o200k_base")
        self.assertLessEqual(small.tokens, 200)
        self.assertGreater(small.dropped_steps, 0)
        self.assertEqual(small.dropped[0].first, 3)
        anthropic = self.c.get_context(self.sid, format="anthropic", budget=5000, truncate=True)
        self.assertEqual(anthropic.format, "anthropic")
        self.assertEqual(anthropic.messages["system"], "You are a careful coding agent.")
        with self.assertRaises(agentmem.BudgetTooSmallError) as cm2:
            self.c.get_context(self.sid, budget=5)
        self.assertEqual(cm2.exception.status, 422)
        self.assertGreater(cm2.exception.required, 5)
        self.assertEqual(cm2.exception.budget, 5)
        with self.assertRaises(agentmem.InvalidRequestError) as cm3:
            self.c.get_context(self.sid, format="xml")
        self.assertEqual(cm3.exception.field, "format")

        out = self.c.compact(self.sid, "prune_old_observations", keep_last_n=2, max_length=50)
        self.assertTrue(out.changed)
        self.assertEqual(out.replaced, [3, 4, 5, 6])
        out = self.c.compact(self.sid, "keep_last_n", n=3)
        self.assertEqual((out.before, out.after), (9, 5))  # pinned steps stay
        out = self.c.compact(self.sid, "summarize", keep_recent=1, summarizer="extractive")
        self.assertTrue(out.summary)
        self.assertEqual(len(out.added), 1)
        with self.assertRaises(agentmem.InvalidRequestError):
            self.c.compact(self.sid, "shrink")
        with self.assertRaises(agentmem.InvalidRequestError) as cm4:
            self.c.compact(self.sid, "summarize", summarizer="llm")  # no LLM configured
        self.assertEqual(cm4.exception.field, "summarizer")


class LongTermTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = agentmem.Client(server().url)

    def test_recall(self) -> None:
        user = unique("recaller")
        sid = unique("r")
        self.c.create_session(sid, user_id=user)
        self.c.append_messages(sid, [
            {"role": "user", "content": "Where do penguins live?"},
            {"role": "assistant", "content": "Penguins live in the southern hemisphere, mostly Antarctica."},
            {"role": "user", "content": "And what do they eat?"},
        ])
        hits = self.c.search_recall("penguins antarctica", k=3, scope="user:" + user, before=1, fresh=True)
        self.assertTrue(hits)
        self.assertIn("Antarctica", hits[0].text)
        self.assertEqual((hits[0].session_id, hits[0].step), (sid, 2))
        self.assertGreater(hits[0].score, 0)
        self.assertEqual([w.text for w in hits[0].window][0], "Where do penguins live?")
        self.assertEqual(self.c.search_recall("penguins", scope="user:" + unique("nobody"), fresh=True), [])
        # Metadata filters (a repeated query parameter) and TF-IDF cosine.
        tfidf = self.c.search_recall("penguins antarctica", filter={"user": user}, similarity="tfidf", fresh=True)
        self.assertIn("Antarctica", tfidf[0].text)
        self.assertEqual(self.c.search_recall("penguins", filter={"user": user, "team": "nobody"}, fresh=True), [])
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            self.c.search_recall("x", k=0)
        self.assertEqual(cm.exception.field, "k")

    def test_forget_user(self) -> None:
        user, other = unique("leaver"), unique("stayer")
        for u in (user, other):
            self.c.create_session(unique("fu"), user_id=u)
        sid = unique("fu")
        self.c.create_session(sid, user_id=user)
        self.c.append_messages(sid, [{"role": "user", "content": "Penguins of the forgotten kind"}])
        self.c.remember(user, "Lives in Lyon")
        self.c.remember(other, "Lives in Oslo")
        self.assertTrue(self.c.search_recall("penguins forgotten", scope="user:" + user, fresh=True))
        out = self.c.forget_user(user, reason="asked to")
        self.assertEqual((out.sessions, out.facts), (2, 1))
        self.assertGreaterEqual(out.documents, 1)
        self.assertEqual(self.c.list_sessions(user_id=user).sessions, [])
        self.assertEqual(self.c.search_facts(user), [])
        self.assertEqual(self.c.search_recall("penguins forgotten", scope="user:" + user, fresh=True), [])
        self.assertEqual([f.text for f in self.c.search_facts(other)], ["Lives in Oslo"])
        self.assertEqual(len(self.c.list_sessions(user_id=other).sessions), 1)
        again = self.c.forget_user(user)
        self.assertEqual((again.sessions, again.facts, again.documents, again.blocks), (0, 0, 0, 0))

    def test_facts(self) -> None:
        user = unique("fan")
        r = self.c.remember(user, "Prefers answers in French", confidence=0.8, source=agentmem.FactSource(session_id="s1", step_seq=2), metadata={"from": "chat"})
        self.assertEqual(r.outcome, "added")
        self.assertEqual((r.fact.user_id, r.fact.text, r.fact.confidence, r.fact.source.session_id), (user, "Prefers answers in French", 0.8, "s1"))
        again = self.c.remember(user, "Prefers answers in French")
        self.assertEqual(again.fact.id, r.fact.id)
        self.assertEqual(again.outcome, "reinforced")
        self.c.remember(user, "Lives in Lyon", confidence=0.6)
        found = self.c.search_facts(user, "which language for answers", k=1)
        self.assertEqual([f.id for f in found], [r.fact.id])
        self.assertEqual(len(self.c.search_facts(user)), 2)
        self.assertEqual(self.c.get_fact(user, r.fact.id).fact.text, "Prefers answers in French")

        # A fact in the context of the user's session.
        sid = unique("f")
        self.c.create_session(sid, user_id=user)
        self.c.append_messages(sid, [{"role": "system", "content": "Be helpful."}, {"role": "user", "content": "Which language should answers use?"}])
        ctx = self.c.get_context(sid, facts=1, budget=4000)
        self.assertEqual([f.id for f in ctx.facts], [r.fact.id])
        self.assertIn("Prefers answers in French", ctx.messages[0]["content"])

        self.c.forget(user, r.fact.id, reason="asked to")
        self.assertEqual([f.text for f in self.c.search_facts(user)], ["Lives in Lyon"])
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            self.c.remember(user, "")
        self.assertEqual(cm.exception.field, "text")

    def test_facts_in_time(self) -> None:
        user = unique("mover")
        berlin = self.c.remember(user, "Lives in Berlin", valid_from=datetime(2020, 5, 1, tzinfo=timezone.utc), metadata={"topic": "home"}).fact
        self.assertEqual(berlin.valid_from, datetime(2020, 5, 1, tzinfo=timezone.utc))
        self.assertIsNone(berlin.valid_to)
        moved = self.c.remember(user, "Lives in Paris", supersedes=berlin.id, valid_from="2025-06-01T00:00:00Z", metadata={"topic": "home"})
        self.assertEqual(moved.outcome, "superseded")
        self.assertEqual((moved.previous.id, moved.previous.valid_to), (berlin.id, datetime(2025, 6, 1, tzinfo=timezone.utc)))
        self.c.remember(user, "Drinks tea", metadata={"topic": "food"})
        self.assertEqual(sorted(f.text for f in self.c.search_facts(user)), ["Drinks tea", "Lives in Paris"])
        self.assertEqual([f.id for f in self.c.search_facts(user, as_of=datetime(2024, 1, 1, tzinfo=timezone.utc))], [berlin.id])
        self.assertEqual([f.id for f in self.c.search_facts(user, "lives", as_of="2025-06-01T00:00:00Z")], [moved.fact.id])
        self.assertEqual([f.text for f in self.c.search_facts(user, filter={"topic": "food"})], ["Drinks tea"])
        self.assertEqual([f.text for f in self.c.list_facts(user, filter={"topic": "home"}, include_superseded=True).facts].count("Lives in Berlin"), 1)
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            self.c.remember(user, "Bad", valid_from="2026-01-01T00:00:00Z", valid_to="2025-01-01T00:00:00Z")
        self.assertEqual(cm.exception.field, "valid_to")
        with self.assertRaises(ValueError):
            self.c.search_facts(user, as_of=datetime(2024, 1, 1))

        # Editing, and the history of the changes.
        f = self.c.update_fact(user, moved.fact.id, text="Lives in Paris, 11th", metadata={"topic": None, "city": "paris"}, reason="more precise")
        self.assertEqual((f.id, f.text, f.metadata), (moved.fact.id, "Lives in Paris, 11th", {"city": "paris"}))
        f = self.c.update_fact(user, moved.fact.id, valid_to="2030-01-01T00:00:00Z", confidence=0.9)
        self.assertEqual((f.valid_to, f.confidence), (datetime(2030, 1, 1, tzinfo=timezone.utc), 0.9))
        f = self.c.update_fact(user, moved.fact.id, valid_to=None, metadata=None)
        self.assertEqual((f.valid_to, f.metadata), (None, {}))
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            self.c.update_fact(user, moved.fact.id, text=None)
        self.assertEqual(cm.exception.field, "text")
        history = self.c.fact_history(user, moved.fact.id)
        self.assertEqual([c.action for c in history], ["added", "updated", "updated", "updated"])
        self.assertEqual((history[1].reason, history[1].before.text, history[1].after.text), ("more precise", "Lives in Paris", "Lives in Paris, 11th"))
        old = self.c.fact_history(user, berlin.id)
        self.assertEqual([c.action for c in old], ["added", "superseded"])
        self.assertEqual((old[1].successor, old[1].after.valid_to), (moved.fact.id, datetime(2025, 6, 1, tzinfo=timezone.utc)))
        self.c.forget(user, moved.fact.id, reason="asked")
        gone = self.c.fact_history(user, moved.fact.id)
        self.assertEqual(gone[-1].action, "forgotten")
        self.assertTrue(all(c.before is None and c.after is None for c in gone))


class BlocksTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = agentmem.Client(server().url)

    def test_user_and_session_blocks(self) -> None:
        user = unique("blocky")
        b = self.c.put_block("human", "Name: Ann.", user_id=user, limit=40, description="the user", by="app")
        self.assertEqual((b.label, b.owner, b.owner_id, b.value, b.limit, b.chars, b.version, b.description, b.updated_by),
                         ("human", "user", user, "Name: Ann.", 40, 10, 1, "the user", "app"))
        self.assertEqual(self.c.get_block("human", user_id=user).value, "Name: Ann.")
        b = self.c.append_block("human", "Likes trains.", user_id=user, by="agent")
        self.assertEqual((b.value, b.version), ("Name: Ann.\nLikes trains.", 2))
        b = self.c.replace_block("human", "trains", "night trains", user_id=user, if_match=2)
        self.assertEqual((b.value, b.version, b.limit), ("Name: Ann.\nLikes night trains.", 3, 40))
        b = self.c.put_block("human", "Name: Ann.", user_id=user, if_match=3)  # a rewrite keeps the limit
        self.assertEqual((b.version, b.limit), (4, 40))
        history = self.c.block_history("human", user_id=user)
        self.assertEqual([(h.version, h.action) for h in history], [(1, "created"), (2, "appended"), (3, "replaced"), (4, "set")])
        self.assertEqual((history[1].by, history[1].before, history[1].after), ("agent", "Name: Ann.", "Name: Ann.\nLikes trains."))
        self.assertIsNotNone(history[0].at)

        # A session's block, shown in its context after the user's.
        sid = unique("bs")
        self.c.create_session(sid, user_id=user)
        self.c.put_block("task", "Plan a trip.", session_id=sid, read_only=True)
        self.assertEqual([x.label for x in self.c.list_blocks(session_id=sid)], ["task"])
        self.assertEqual([x.label for x in self.c.list_blocks(user_id=user)], ["human"])
        self.c.append_messages(sid, [{"role": "system", "content": "You plan trips."}, {"role": "user", "content": "Hi"}])
        ctx = self.c.get_context(sid, budget=4000)
        self.assertEqual([(x.label, x.owner, x.version) for x in ctx.blocks], [("human", "user", 4), ("task", "session", 1)])
        self.assertIn("Plan a trip.", ctx.messages[0]["content"])

        self.c.delete_block("human", user_id=user, if_match=4)
        self.assertEqual(self.c.list_blocks(user_id=user), [])
        with self.assertRaises(agentmem.NotFoundError):
            self.c.get_block("human", user_id=user)
        with self.assertRaises(agentmem.NotFoundError):
            self.c.list_blocks(session_id=unique("nosuch"))
        with self.assertRaises(ValueError):
            self.c.list_blocks()
        with self.assertRaises(ValueError):
            self.c.get_block("human", user_id=user, session_id=sid)

    def test_refusals(self) -> None:
        user = unique("refused")
        self.c.put_block("notes", "one two two", user_id=user, limit=20)
        with self.assertRaises(agentmem.OverLimitError) as over:
            self.c.append_block("notes", "x" * 20, user_id=user)
        self.assertEqual((over.exception.status, over.exception.field), (422, "text"))
        self.assertIsInstance(over.exception, agentmem.UnprocessableError)
        with self.assertRaises(agentmem.NoMatchError) as nm:
            self.c.replace_block("notes", "two", "three", user_id=user)
        self.assertEqual((nm.exception.status, nm.exception.field), (422, "old"))
        with self.assertRaises(agentmem.NoMatchError):
            self.c.replace_block("notes", "four", "five", user_id=user)
        with self.assertRaises(agentmem.ConflictError) as stale:
            self.c.put_block("notes", "new", user_id=user, if_match=7)
        self.assertEqual((type(stale.exception), stale.exception.code, stale.exception.field), (agentmem.ConflictError, "conflict", "If-Match"))
        with self.assertRaises(agentmem.ConflictError):
            self.c.delete_block("notes", user_id=user, if_match=2)
        self.c.put_block("notes", "locked", user_id=user, read_only=True)
        with self.assertRaises(agentmem.ReadOnlyError) as ro:
            self.c.append_block("notes", "more", user_id=user)
        self.assertEqual((ro.exception.status, ro.exception.code), (409, "read_only"))
        with self.assertRaises(agentmem.ReadOnlyError):
            self.c.replace_block("notes", "locked", "open", user_id=user)
        with self.assertRaises(agentmem.InvalidRequestError) as bad:
            self.c.put_block("not a label", "x", user_id=user)
        self.assertEqual(bad.exception.field, "label")
        # Nothing of the refused edits was written.
        self.assertEqual([(h.version, h.action) for h in self.c.block_history("notes", user_id=user)], [(1, "created"), (2, "set")])
        self.assertEqual(self.c.get_block("notes", user_id=user).value, "locked")


class ItemsTest(unittest.TestCase):
    """The items methods; the session protocol over them is in
    test_session."""

    def test_items(self) -> None:
        c = agentmem.Client(server().url)
        sid = unique("i")
        c.create_session(sid)
        items = [
            {"role": "user", "content": "Weather?"},
            {"type": "function_call", "call_id": "k1", "name": "weather", "arguments": "{}"},
        ]
        self.assertEqual(c.add_items(sid, items).seqs, [1, 2])
        out = {"type": "function_call_output", "call_id": "k1", "output": "sunny"}
        self.assertEqual(c.add_items(sid, [out], idempotency_key="o1").updated, [2])
        self.assertEqual(c.get_items(sid), items + [out])
        self.assertEqual(c.get_items(sid, limit=1), [out])
        self.assertEqual(c.pop_item(sid), out)
        c.clear_items(sid)
        self.assertEqual(c.get_items(sid), [])
        with self.assertRaises(agentmem.NothingToPopError):
            c.pop_item(sid)
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            c.add_items(sid, [{"type": "function_call_output", "call_id": "nobody", "output": "x"}])
        self.assertEqual(cm.exception.field, "items[0].call_id")
        with self.assertRaises(agentmem.NotFoundError):
            c.get_items(unique("missing"))


class PagesTest(unittest.TestCase):
    """Reads of every item or fact follow the server's pages."""

    def test_items_of_more_than_a_page(self) -> None:
        c = agentmem.Client(server().url)
        sid = unique("pages")
        c.create_session(sid)
        items = [{"role": "user", "content": f"m{i}"} for i in range(2 * agentmem.MAX_BATCH + 5)]
        for i in range(0, len(items), agentmem.MAX_BATCH):
            c.add_items(sid, items[i : i + agentmem.MAX_BATCH])
        # The server answers one bounded page and a token.
        page = c.request("GET", "/v1/sessions/" + sid + "/items")[2]
        self.assertEqual(len(page["items"]), 1000)
        self.assertTrue(page["next_page_token"])
        self.assertEqual(c.get_items(sid), items)
        self.assertEqual(c.get_items(sid, limit=1500), items[-1500:])
        self.assertEqual(c.get_items(sid, limit=30, page_size=7), items[-30:])
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            c.get_items(sid, page_size=0)
        self.assertEqual(cm.exception.field, "page_size")
        self.assertIn("from 1 to 10000", cm.exception.message)

    def test_items_changed_between_pages(self) -> None:
        # A pop between two pages: the read starts over and sees it.
        c = PopAfterFirstPage(server().url)
        sid = unique("popped")
        c.create_session(sid)
        items = [{"role": "user", "content": f"m{i}"} for i in range(25)]
        c.add_items(sid, items)
        c.pop_sid = sid
        self.assertEqual(c.get_items(sid, page_size=10), items[:-1])
        self.assertEqual(c.pages, 4)  # a page (the next is refused), then 3 from the first

    def test_facts_of_more_than_a_page(self) -> None:
        c = agentmem.Client(server().url)
        user = unique("collector")
        for i in range(105):
            c.remember(user, f"Collects stamp {i}.")
        page = c.list_facts(user, page_size=40)
        self.assertEqual((len(page.facts), page.damaged), (40, []))
        self.assertTrue(page.next_page_token)
        every = c.search_facts(user)
        self.assertEqual(len({f.id for f in every}), 105)
        self.assertEqual([f.id for f in c.iter_facts(user, page_size=40)], [f.id for f in every])
        self.assertEqual(len(c.search_facts(user, k=3)), 3)


class PopAfterFirstPage(agentmem.Client):
    """A client that pops an item of session pop_sid after reading the
    first page of its items, once, and counts the pages it reads (those
    answered)."""

    pop_sid = ""
    pages = 0

    def _json(self, method: str, path: str, **kw):  # type: ignore[no-untyped-def]
        out = super()._json(method, path, **kw)
        if method == "GET" and path.endswith("/items"):
            self.pages += 1
            if self.pop_sid:
                sid, self.pop_sid = self.pop_sid, ""
                agentmem.Client(self.base_url).pop_item(sid)
        return out


class DamagedTest(unittest.TestCase):
    """A session whose stored record does not decode is named in the
    page's damaged list and passed to on_damaged."""

    def test_damaged_session(self) -> None:
        srv = Server()
        self.addCleanup(srv.stop)
        seen = []
        c = agentmem.Client(srv.url, on_damaged=seen.append)
        c.create_session("s1")
        c.create_session("s2")
        db = sqlite3.connect(os.path.join(srv.dir, "agentmem.db"))
        try:
            db.execute("""UPDATE sessions SET metadata = '{"m":' WHERE id = 's2'""")
            db.commit()
        finally:
            db.close()
        page = c.list_sessions()
        self.assertEqual([s.id for s in page.sessions], ["s1"])
        self.assertEqual([(d.id, d.kind) for d in page.damaged], [("s2", "session")])
        self.assertTrue(page.damaged[0].error)
        self.assertEqual(seen, page.damaged)


class APIKeyTest(unittest.TestCase):
    """A server that requires keys: the key reaches its tenant's sessions,
    no key or a bad one is 401, another tenant's session is 404."""

    def test_api_key(self) -> None:
        srv = Server(key_tenant="acme")
        self.addCleanup(srv.stop)
        assert srv.key
        acme = agentmem.Client(srv.url, api_key=srv.key)
        s = acme.create_session("k1")
        self.assertEqual(s.tenant, "acme")
        self.assertEqual(acme.get_items("k1"), [])
        for client in (agentmem.Client(srv.url), agentmem.Client(srv.url, api_key=srv.key[:-2] + "xx")):
            with self.assertRaises(agentmem.UnauthorizedError) as cm:
                client.get_session("k1")
            self.assertEqual(cm.exception.status, 401)


class ExtractFactsTest(unittest.TestCase):
    """A server with a model (a stand-in): extract_facts learns from a
    turn, and a session may opt in to the background extraction; the
    shared server, without a model, refuses both with typed errors."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.model = Model()
        cls.srv = Server(args=["--llm-base-url", cls.model.base_url, "--llm-model", "stand-in"])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.srv.stop()
        cls.model.stop()

    def test_extract_facts(self) -> None:
        c = agentmem.Client(self.srv.url)
        user = unique("extract-user")
        first = c.extract_facts(user, [{"role": "user", "content": "Hi! I live in Berlin."}, {"role": "assistant", "content": "Nice."}],
                                source=agentmem.FactSource(agent="support-bot"))
        self.assertIsInstance(first, agentmem.ExtractResult)
        self.assertEqual(len(first.decisions), 1)
        add = first.decisions[0]
        self.assertIsInstance(add, agentmem.ExtractedDecision)
        self.assertEqual((add.action, add.outcome), ("add", "added"))
        assert add.fact is not None
        self.assertEqual((add.fact.text, add.fact.user_id, add.fact.source.agent), ("Lives in Berlin.", user, "support-bot"))
        second = c.extract_facts(user, [{"role": "user", "content": "I live in Paris now."}])
        sup = second.decisions[0]
        self.assertEqual((sup.action, sup.outcome), ("supersede", "superseded"))
        assert sup.fact is not None and sup.previous is not None
        self.assertEqual((sup.fact.text, sup.previous.id, sup.previous.superseded_by), ("Lives in Paris.", add.fact.id, sup.fact.id))
        self.assertEqual(c.extract_facts(user, [{"role": "user", "content": "What time is it?"}]).decisions, [])
        self.assertEqual([f.text for f in c.list_facts(user).facts], ["Lives in Paris."])

        self.model.down = True
        try:
            with self.assertRaises(agentmem.ExtractionFailedError) as cm:
                c.extract_facts(user, [{"role": "user", "content": "I live in Rome."}])
        finally:
            self.model.down = False
        self.assertEqual((cm.exception.status, cm.exception.field), (502, "extractor"))
        self.assertEqual([f.text for f in c.list_facts(user).facts], ["Lives in Paris."])
        with self.assertRaises(agentmem.InvalidRequestError) as bad:
            c.extract_facts(user, [])
        self.assertEqual(bad.exception.field, "messages")

    def test_extract_facts_setting(self) -> None:
        c = agentmem.Client(self.srv.url)
        for value in (True, False, None):
            sid = unique("extract")
            s = c.create_session(sid, user_id="alice", extract_facts=value)
            self.assertIs(s.extract_facts, value)
            self.assertIs(c.get_session(sid).extract_facts, value)
            self.assertIs(c.fork_session(sid).extract_facts, value)  # a branch inherits it
        branch = c.fork_session(c.create_session(unique("extract"), user_id="alice", extract_facts=True).id, extract_facts=False)
        self.assertIs(branch.extract_facts, False)
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            c.create_session(unique("extract"), extract_facts=True)  # no user
        self.assertEqual(cm.exception.field, "extract_facts")

    def test_without_a_model(self) -> None:
        c = agentmem.Client(server().url)
        with self.assertRaises(agentmem.NotConfiguredError):
            c.extract_facts("alice", [{"role": "user", "content": "I live in Oslo."}])
        sid = unique("extract")
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            c.create_session(sid, user_id="alice", extract_facts=True)
        self.assertEqual(cm.exception.field, "extract_facts")
        with self.assertRaises(agentmem.NotFoundError):
            c.get_session(sid)
        self.assertIs(c.create_session(sid, user_id="alice", extract_facts=False).extract_facts, False)


class ErrorMapTest(unittest.TestCase):
    def test_every_code_has_its_class(self) -> None:
        """Every error code of api/errors.go maps to its own class."""
        src = (REPO / "api" / "errors.go").read_text()
        codes = re.findall(r'^\s+Code\w+\s+=\s+"(\w+)"', src, re.M)
        self.assertGreater(len(codes), 15)
        for code in codes:
            cls = agentmem.ERROR_CLASSES.get(code)
            self.assertIsNotNone(cls, code)
            self.assertEqual(cls.code_name, code)
            e = agentmem.errors.error_from_response(400, {"error": {"code": code, "message": "m", "field": "f"}})
            self.assertIs(type(e), cls)
            self.assertEqual((e.code, e.message, e.field), (code, "m", "f"))

    def test_unknown_code_and_body(self) -> None:
        e = agentmem.errors.error_from_response(418, {"error": {"code": "teapot", "message": "short and stout"}})
        self.assertIs(type(e), agentmem.APIError)
        self.assertEqual(str(e), "418 teapot: short and stout")
        e = agentmem.errors.error_from_response(502, "<html>bad gateway</html>")
        self.assertEqual((e.status, e.code), (502, "unknown"))
        self.assertIn("bad gateway", e.message)

    def test_transport_error(self) -> None:
        c = agentmem.Client("http://127.0.0.1:9", timeout=2)  # discard: nothing listens
        with self.assertRaises(agentmem.TransportError):
            c.get_session("x")


if __name__ == "__main__":
    unittest.main()
