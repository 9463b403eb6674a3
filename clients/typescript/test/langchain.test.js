// AgentmemChatMessageHistory against the real agentmem binary and the real
// @langchain/core: messages round-trip, and RunnableWithMessageHistory
// runs turns with tool calls over it, with a scripted chat model.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { ChatPromptTemplate, MessagesPlaceholder } from "@langchain/core/prompts";
import { RunnableWithMessageHistory } from "@langchain/core/runnables";
import { fakeModel } from "@langchain/core/testing";
import { CHAT_PINNING, Client } from "@agentmem/client";
import { AgentmemChatMessageHistory } from "@agentmem/client/langchain";
import { startServer } from "./helpers.js";

let server;
let client;
before(async () => {
  server = await startServer();
  client = new Client({ baseUrl: server.baseUrl });
});
after(async () => {
  await server?.stop();
});

/** plain is what a message is made of, for comparison. */
function plain(m) {
  const out = { type: m.getType(), content: m.content, id: m.id };
  if (m.getType() === "ai") out.tool_calls = (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.name, args: c.args }));
  if (m.getType() === "tool") out.tool_call_id = m.tool_call_id;
  return out;
}

describe("AgentmemChatMessageHistory", () => {
  test("human, AI with tool calls, tool and system messages round-trip with their IDs", async () => {
    const history = new AgentmemChatMessageHistory({ client, sessionId: "lc-roundtrip" });
    const messages = [
      new SystemMessage({ content: "You are a travel agent.", id: "sys-1" }),
      new HumanMessage({ content: "Weather and time in Paris?", id: "human-1" }),
      new AIMessage({
        content: "Let me check.",
        id: "ai-1",
        tool_calls: [
          { id: "call_w", name: "weather", args: { city: "Paris", units: ["C"] } },
          { id: "call_t", name: "time", args: {} },
        ],
      }),
      new ToolMessage({ content: "18C, sunny", tool_call_id: "call_w", id: "tool-1" }),
      new ToolMessage({ content: "14:05", tool_call_id: "call_t", id: "tool-2" }),
      new AIMessage({ content: "It is 18C and sunny; 14:05.", id: "ai-2" }),
      // Without IDs: they read back without.
      new HumanMessage("Thanks!"),
      new AIMessage("You're welcome."),
    ];
    // One at a time, as LangChain saves them: the tool messages come after
    // their AI message, in requests of their own.
    for (const m of messages) await history.addMessage(m);
    const got = await history.getMessages();
    assert.deepEqual(got.map(plain), messages.map(plain));
    assert.ok(got[3] instanceof ToolMessage && got[2] instanceof AIMessage);

    // A new history object on the same session reads the same.
    const again = new AgentmemChatMessageHistory({ client, sessionId: "lc-roundtrip" });
    assert.deepEqual((await again.getMessages()).map(plain), messages.map(plain));

    // The session is an agentmem session like any other.
    const ws = await client.readWorkingSet("lc-roundtrip");
    assert.deepEqual(ws.map((s) => s.type), ["system_prompt", "task", "action", "action", "task", "action"]);
  });

  test("a pending tool call reads back as the AI message alone", async () => {
    const history = new AgentmemChatMessageHistory({ client, sessionId: "lc-pending", create: { user_id: "lc-user", agent: "lc" } });
    const ai = new AIMessage({ content: "", id: "ai-p", tool_calls: [{ id: "c1", name: "lookup", args: { q: "x" } }] });
    await history.addMessages([new HumanMessage({ content: "Look it up", id: "h" }), ai]);
    assert.deepEqual((await history.getMessages()).map(plain), [plain(new HumanMessage({ content: "Look it up", id: "h" })), plain(ai)]);
    await history.addMessage(new ToolMessage({ content: "found", tool_call_id: "c1" }));
    const got = await history.getMessages();
    assert.equal(got.length, 3);
    assert.equal(got[2].tool_call_id, "c1");
    assert.equal(got[2].id, undefined);
    // The session was created on first use, as asked.
    const s = await client.getSession("lc-pending");
    assert.equal(s.user_id, "lc-user");
    assert.equal(s.agent, "lc");
    assert.deepEqual(s.pinning, CHAT_PINNING, "a chat's pinning");
  });

  test("content blocks are stored as their text; other blocks are refused before anything is sent", async () => {
    const history = new AgentmemChatMessageHistory({ client, sessionId: "lc-blocks" });
    await history.addMessage(new HumanMessage({ content: [{ type: "text", text: "part one" }, { type: "text", text: " and two" }] }));
    assert.deepEqual((await history.getMessages()).map((m) => m.content), ["part one and two"]);
    await assert.rejects(history.addMessage(new HumanMessage({ content: [{ type: "image_url", image_url: "data:," }] })), TypeError);
    assert.equal((await history.getMessages()).length, 1);
  });

  test("clear empties the history; the session's log keeps it", async () => {
    const history = new AgentmemChatMessageHistory({ client, sessionId: "lc-clear" });
    await history.addUserMessage("hello");
    await history.addAIMessage("hi");
    await history.clear();
    assert.deepEqual(await history.getMessages(), []);
    const log = await client.readSteps("lc-clear");
    assert.equal(log.steps.length, 2);
    await history.addUserMessage("again");
    assert.deepEqual((await history.getMessages()).map((m) => m.content), ["again"]);
  });

  test("a compacted session reads back compacted: kept messages as they were, a summary as a system message", async () => {
    const history = new AgentmemChatMessageHistory({ client, sessionId: "lc-compact" });
    for (let i = 1; i <= 4; i++) {
      await history.addMessage(new HumanMessage({ content: `question ${i}`, id: `h${i}` }));
      await history.addMessage(new AIMessage({ content: `answer ${i}`, id: `a${i}` }));
    }
    await client.compact("lc-compact", { strategy: "keep_last_n", n: 2 });
    // A chat pins no question (CHAT_PINNING): the newest two stay.
    assert.deepEqual(
      (await history.getMessages()).map((m) => `${m.getType()}:${m.id}`),
      ["human:h4", "ai:a4"],
    );
    await history.addMessage(new HumanMessage({ content: "question 5", id: "h5" }));
    await client.compact("lc-compact", { strategy: "summarize", keep_recent: 1, summarizer: "extractive" });
    const got = await history.getMessages();
    assert.deepEqual(got.map((m) => m.getType()), ["system", "human"]);
    assert.match(got[0].content, /question 4|answer 4/);
    assert.equal(got[1].id, "h5");
  });

  test("RunnableWithMessageHistory runs turns with tool calls over it", async () => {
    const model = fakeModel()
      .respond(new AIMessage({ content: "", id: "ai-turn1", tool_calls: [{ id: "call_1", name: "weather", args: { city: "Oslo" } }] }))
      .respond(new AIMessage({ content: "It is snowing in Oslo.", id: "ai-turn2" }))
      .respond(new AIMessage({ content: "Wear boots.", id: "ai-turn3" }));
    const prompt = ChatPromptTemplate.fromMessages([
      ["system", "You answer about the weather."],
      new MessagesPlaceholder("history"),
      ["human", "{input}"],
    ]);
    const histories = new Map();
    const chain = new RunnableWithMessageHistory({
      runnable: prompt.pipe(model),
      getMessageHistory: (sessionId) => {
        if (!histories.has(sessionId)) histories.set(sessionId, new AgentmemChatMessageHistory({ client, sessionId }));
        return histories.get(sessionId);
      },
      inputMessagesKey: "input",
      historyMessagesKey: "history",
    });
    const config = { configurable: { sessionId: "lc-runnable" } };

    const r1 = await chain.invoke({ input: "Weather in Oslo?" }, config);
    assert.equal(r1.tool_calls[0].id, "call_1");
    // The tool runs outside the chain; its result joins the history.
    const history = histories.get("lc-runnable");
    await history.addMessage(new ToolMessage({ content: "-3C, snow", tool_call_id: "call_1", id: "tool-oslo" }));
    const r2 = await chain.invoke({ input: "So?" }, config);
    assert.equal(r2.content, "It is snowing in Oslo.");
    await chain.invoke({ input: "What should I wear?" }, config);

    // What the model saw on each turn: the system prompt, the history read
    // back from agentmem, the new input.
    const seen = model.calls.map((c) => c.messages.map(plain));
    const sys = plain(new SystemMessage("You answer about the weather."));
    const h1 = { type: "human", content: "Weather in Oslo?" };
    const a1 = { type: "ai", content: "", id: "ai-turn1", tool_calls: [{ id: "call_1", name: "weather", args: { city: "Oslo" } }] };
    const t1 = { type: "tool", content: "-3C, snow", id: "tool-oslo", tool_call_id: "call_1" };
    const h2 = { type: "human", content: "So?" };
    const a2 = { type: "ai", content: "It is snowing in Oslo.", id: "ai-turn2", tool_calls: [] };
    const h3 = { type: "human", content: "What should I wear?" };
    const strip = (ms) => ms.map((m) => ({ ...m, id: m.type === "human" ? undefined : m.id }));
    assert.deepEqual(strip(seen[0]), strip([sys, { ...h1, id: undefined }]));
    assert.deepEqual(strip(seen[1]), strip([sys, h1, a1, t1, h2]));
    assert.deepEqual(strip(seen[2]), strip([sys, h1, a1, t1, h2, a2, h3]));

    // And what the session holds after.
    const stored = (await history.getMessages()).map(plain);
    assert.deepEqual(
      stored.map((m) => [m.type, m.content]),
      [
        ["human", "Weather in Oslo?"],
        ["ai", ""],
        ["tool", "-3C, snow"],
        ["human", "So?"],
        ["ai", "It is snowing in Oslo."],
        ["human", "What should I wear?"],
        ["ai", "Wear boots."],
      ],
    );
    assert.deepEqual(stored[1].tool_calls, a1.tool_calls);
    assert.equal(stored[6].id, "ai-turn3");
  });
});
