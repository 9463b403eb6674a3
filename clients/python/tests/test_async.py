"""The asyncio client against the real server."""

from __future__ import annotations

import asyncio
import unittest

import agentmem

from ._server import server, unique


def setUpModule() -> None:
    server()


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def test_methods_and_concurrency(self) -> None:
        c = agentmem.AsyncClient(server().url)
        self.assertTrue(await c.health())
        user = unique("async")
        sid = unique("a")
        s = await c.create_session(sid, user_id=user, agent="bot")
        self.assertEqual((await c.get_session(sid)).agent, "bot")
        # Item-by-item writes from concurrent tasks: one call, then its
        # three results at once; none is lost.
        await c.append_messages(sid, [{"role": "user", "content": "three lookups"}, {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "look", "arguments": "{}"}} for i in range(3)]}])
        results = await asyncio.gather(*(c.append_messages(sid, {"role": "tool", "tool_call_id": f"c{i}", "content": f"r{i}"}) for i in range(3)))
        self.assertEqual(sorted(r.updated[0] for r in results), [2, 2, 2])
        ctx = await c.get_context(sid, budget=2000)
        self.assertEqual(ctx.pending, [])
        self.assertEqual([m.get("content") for m in ctx.messages if m["role"] == "tool"], ["r0", "r1", "r2"])

        await c.append_steps(sid, {"type": "final_answer", "answer": "done"}, idempotency_key="fa")
        self.assertEqual(len((await c.read_steps(sid)).steps), 3)
        self.assertEqual((await c.pop_message(sid)).message["content"], "done")
        self.assertEqual((await c.compact(sid, "prune_old_observations", keep_last_n=0, max_length=1)).replaced, [2])
        branch = await c.fork_session(sid, new_id=unique("ab"))
        self.assertEqual(branch.parent_id, sid)
        page = await c.list_sessions(user_id=user)
        self.assertEqual({x.id for x in page.sessions}, {s.id, branch.id})

        await c.add_items(sid, [{"role": "user", "content": "more"}])
        self.assertEqual(await c.get_items(sid, limit=1), [{"role": "user", "content": "more"}])
        self.assertEqual(await c.pop_item(sid), {"role": "user", "content": "more"})
        await c.clear_items(sid)
        self.assertEqual(await c.get_items(sid), [])

        r = await c.remember(user, "Likes tea", confidence=0.9)
        self.assertEqual([f.id for f in await c.search_facts(user, "tea")], [r.fact.id])
        self.assertEqual((await c.get_fact(user, r.fact.id)).fact.text, "Likes tea")
        await c.forget(user, r.fact.id)
        self.assertEqual(await c.search_facts(user), [])
        b = await c.put_block("human", "Name: Ann.", user_id=user)
        b = await c.append_block("human", "Likes tea.", user_id=user, if_match=b.version)
        b = await c.replace_block("human", "tea", "coffee", user_id=user)
        self.assertEqual((await c.get_block("human", user_id=user)).value, "Name: Ann.\nLikes coffee.")
        self.assertEqual([x.label for x in await c.list_blocks(user_id=user)], ["human"])
        self.assertEqual([h.action for h in await c.block_history("human", user_id=user)], ["created", "appended", "replaced"])
        await c.delete_block("human", user_id=user, if_match=b.version)
        self.assertEqual(await c.list_blocks(user_id=user), [])
        hits = await c.search_recall("three lookups", scope="session:" + sid, fresh=True)
        self.assertEqual(hits[0].session_id, sid)

        await c.delete_session(sid)
        with self.assertRaises(agentmem.NotFoundError):
            await c.get_session(sid)

    async def test_errors_are_typed(self) -> None:
        c = agentmem.AsyncClient(client=agentmem.Client(server().url))
        with self.assertRaises(agentmem.NothingToPopError):
            sid = unique("e")
            await c.create_session(sid)
            await c.pop_message(sid)
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            await c.get_context(sid, budget=-1)
        self.assertEqual(cm.exception.field, "budget")
        with self.assertRaises(agentmem.NoMatchError):
            await c.put_block("b", "x", session_id=sid)
            await c.replace_block("b", "y", "z", session_id=sid)
        with self.assertRaises(ValueError):
            agentmem.AsyncClient()


if __name__ == "__main__":
    unittest.main()
