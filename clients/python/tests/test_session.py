"""AgentmemSession, the OpenAI Agents SDK's session protocol, against the
real server: every item type comes back exactly, in order."""

from __future__ import annotations

import copy
import unittest
from types import SimpleNamespace
from typing import Any, Dict, List

import agentmem

from ._server import server, unique

Item = Dict[str, Any]


def setUpModule() -> None:
    server()


# One item of each kind the Agents SDK stores, as it writes them.
EVERY_TYPE: List[Item] = [
    {"role": "developer", "content": "Be brief."},
    {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "You are a weather bot."}]},
    {"role": "user", "content": "What is the weather in Paris?"},
    {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "And this picture?"},
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"},
        {"type": "input_file", "file_id": "file-1", "filename": "a.pdf"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need the weather tool."}], "encrypted_content": None},
    {"arguments": "{\"city\":\"Paris\"}", "call_id": "call_1", "name": "get_weather", "type": "function_call", "id": "fc_1", "status": "completed"},
    {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
    {"call_id": "call_1", "output": "sunny, 21°C <b>", "type": "function_call_output"},
    {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "12:00"}]},
    {"id": "msg_1", "content": [{"annotations": [], "text": "Sunny, 21°C.", "type": "output_text", "logprobs": []}], "role": "assistant", "status": "completed", "type": "message"},
    {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No pictures."}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "paris weather"}},
    {"type": "file_search_call", "id": "fs_1", "queries": ["q"], "status": "completed", "results": None},
    {"type": "computer_call", "id": "cu_1", "call_id": "cc_1", "action": {"type": "click", "x": 1, "y": 2, "button": "left"}, "pending_safety_checks": [], "status": "completed"},
    {"type": "computer_call_output", "call_id": "cc_1", "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,BBBB"}},
    {"type": "image_generation_call", "id": "ig_1", "result": "Q0NDQw==", "status": "completed"},
    {"type": "code_interpreter_call", "id": "ci_1", "code": "print(1)", "container_id": "c", "outputs": [{"type": "logs", "logs": "1"}], "status": "completed"},
    {"type": "local_shell_call", "id": "ls_1", "call_id": "lc_1", "action": {"type": "exec", "command": ["ls"], "env": {}}, "status": "completed"},
    {"type": "local_shell_call_output", "id": "lc_1", "output": "a.txt"},
    {"type": "mcp_list_tools", "id": "ml_1", "server_label": "s", "tools": [{"name": "t", "input_schema": {}}]},
    {"type": "mcp_approval_request", "id": "ma_1", "server_label": "s", "name": "t", "arguments": "{}"},
    {"type": "mcp_approval_response", "approval_request_id": "ma_1", "approve": True},
    {"type": "mcp_call", "id": "mc_1", "server_label": "s", "name": "t", "arguments": "{}", "output": "ok", "error": None},
    {"type": "custom_tool_call", "call_id": "ct_1", "name": "grammar", "input": "x = 1"},
    {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "parsed"},
    {"type": "item_reference", "id": "msg_0"},
    {"type": "some_future_item", "payload": {"n": 1.5, "big": 12345678901234567890, "s": "é\n\u2028", "neg": -0.25, "t": True}},
]


class SessionProtocolTest(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        self.client = agentmem.AsyncClient(server().url)

    def session(self, **kw: Any) -> agentmem.AgentmemSession:
        return agentmem.AgentmemSession(unique("sdk"), self.client, **kw)

    def assertItems(self, got: List[Item], want: List[Item]) -> None:
        self.assertEqual(len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertEqual(g, w, f"item {i}")
            self.assertEqual(list(g), list(w), f"item {i}: member order")

    async def test_every_item_type_at_once(self) -> None:
        s = self.session(user_id="alice", agent="weather")
        items = copy.deepcopy(EVERY_TYPE)
        await s.add_items(items)
        self.assertEqual(items, EVERY_TYPE, "add_items changed its argument")
        self.assertItems(await s.get_items(), EVERY_TYPE)
        # Created on first use, with what was given.
        sess = await self.client.get_session(s.session_id)
        self.assertEqual((sess.user_id, sess.agent), ("alice", "weather"))
        # The chat turns render in the context; the rest does not.
        ctx = await self.client.get_context(s.session_id)
        roles = [(m["role"], m.get("content") if isinstance(m.get("content"), str) else None) for m in ctx.messages]
        self.assertIn(("tool", "sunny, 21°C <b>"), roles)
        self.assertIn(("assistant", "Sunny, 21°C."), roles)
        self.assertIn(("system", "Be brief."), roles)
        text = str(ctx.messages)
        for hidden in ("rs_1", "Need the weather tool", "ws_1", "Q0NDQw==", "mcp"):
            self.assertNotIn(hidden, text)
        self.assertEqual(ctx.pending, [])

    async def test_item_by_item(self) -> None:
        # One add_items per item, a function_call before its output with
        # other items in between, as the SDK's streaming runs save them.
        s = self.session()
        order = [0, 2, 4, 5, 6, 11, 8, 7, 9]
        for i in order:
            await s.add_items([copy.deepcopy(EVERY_TYPE[i])])
            self.assertItems(await s.get_items(limit=1), [EVERY_TYPE[i]])
        self.assertItems(await s.get_items(), [EVERY_TYPE[i] for i in order])
        # While an output is missing its call is pending, not rendered.
        t = self.session()
        await t.add_items([EVERY_TYPE[2], EVERY_TYPE[5]])
        ctx = await self.client.get_context(t.session_id)
        self.assertEqual([p.tool_call_ids for p in ctx.pending], [["call_1"]])
        self.assertNotIn("call_1", str(ctx.messages))
        await t.add_items([EVERY_TYPE[7]])
        self.assertEqual((await self.client.get_context(t.session_id)).pending, [])

    async def test_limit(self) -> None:
        s = self.session()
        await s.add_items(EVERY_TYPE[:6])
        self.assertItems(await s.get_items(limit=2), EVERY_TYPE[4:6])
        self.assertItems(await s.get_items(limit=100), EVERY_TYPE[:6])
        self.assertEqual(await s.get_items(limit=0), [])
        settings = SimpleNamespace(limit=3)  # the SDK's SessionSettings has .limit
        t = agentmem.AgentmemSession(s.session_id, self.client, session_settings=settings)
        self.assertItems(await t.get_items(), EVERY_TYPE[3:6])
        self.assertItems(await t.get_items(limit=1), EVERY_TYPE[5:6])

    async def test_pop_item(self) -> None:
        s = self.session()
        items = [EVERY_TYPE[2], EVERY_TYPE[5], EVERY_TYPE[6], EVERY_TYPE[8], EVERY_TYPE[4], EVERY_TYPE[7], EVERY_TYPE[9]]
        await s.add_items(items[:3])
        await s.add_items(items[3:5])
        await s.add_items(items[5:])
        self.assertItems(await s.get_items(), items)
        self.assertEqual(await s.pop_item(), items[6])
        # call_1's output is newest although its call is older.
        self.assertEqual(await s.pop_item(), items[5])
        ctx = await self.client.get_context(s.session_id)
        self.assertEqual([p.tool_call_ids for p in ctx.pending], [["call_1"]])
        self.assertItems(await s.get_items(), items[:5])
        # A new output answers the call again.
        rainy = {"type": "function_call_output", "call_id": "call_1", "output": "rainy"}
        await s.add_items([rainy])
        self.assertItems(await s.get_items(), items[:5] + [rainy])
        for want in reversed(items[:5] + [rainy]):
            self.assertEqual(await s.pop_item(), want)
        self.assertIsNone(await s.pop_item())
        self.assertEqual(await s.get_items(), [])

    async def test_clear_session(self) -> None:
        s = self.session()
        await s.add_items(EVERY_TYPE[:8])
        await s.clear_session()
        self.assertEqual(await s.get_items(), [])
        self.assertIsNone(await s.pop_item())
        # The log keeps everything; the session goes on.
        log = await self.client.read_steps(s.session_id)
        self.assertEqual(len(log.steps), 7)
        await s.add_items([EVERY_TYPE[2]])
        self.assertItems(await s.get_items(), [EVERY_TYPE[2]])
        # Clearing a session that does not exist yet creates it.
        t = self.session()
        await t.clear_session()
        self.assertEqual((await self.client.get_session(t.session_id)).id, t.session_id)

    async def test_first_use_and_errors(self) -> None:
        s = self.session(metadata={"app": "x"})
        self.assertEqual(await s.get_items(), [])  # creates it
        created = await self.client.get_session(s.session_id)
        # A chat's pinning: the system prompts and the summary, not the
        # first question.
        self.assertEqual((created.metadata, created.pinning, created.auto_compact), ({"app": "x"}, agentmem.CHAT_PINNING, None))
        u = self.session(pinning=agentmem.DEFAULT_PINNING, auto_compact=agentmem.AutoCompact(max_tokens=9000))
        await u.add_items([{"role": "user", "content": "hi"}])
        created = await self.client.get_session(u.session_id)
        self.assertEqual((created.pinning, created.auto_compact.max_tokens), (agentmem.DEFAULT_PINNING, 9000))
        # A session deleted under it is not created again silently.
        await self.client.delete_session(s.session_id)
        with self.assertRaises(agentmem.NotFoundError):
            await s.get_items()
        t = self.session()
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            await t.add_items([{"role": "robot", "content": "x"}])
        self.assertEqual(cm.exception.field, "items[0].role")
        with self.assertRaises(agentmem.InvalidRequestError) as cm:
            await t.add_items([{"type": "function_call_output", "call_id": "nobody", "output": "x"}])
        self.assertEqual(cm.exception.field, "items[0].call_id")
        with self.assertRaises(TypeError):
            await t.add_items(["not an item"])
        await t.add_items([])
        self.assertEqual(await t.get_items(), [])

    async def test_blocking_client_and_batches(self) -> None:
        s = agentmem.AgentmemSession(unique("sdk"), agentmem.Client(server().url))
        self.assertIsInstance(s.client, agentmem.AsyncClient)
        # More items than a batch, and than a page of the server's (1000):
        # get_items reads every page.
        many = [{"role": "user", "content": f"message {i}"} for i in range(2 * agentmem.MAX_BATCH + 5)]
        await s.add_items(many)
        got = await s.get_items()
        self.assertEqual(got, many)
        self.assertEqual(await s.get_items(limit=2), many[-2:])


if __name__ == "__main__":
    unittest.main()
