// AgentmemSession against the real agentmem binary and the real OpenAI
// Agents SDK: items of every type round-trip exactly, and a real Runner
// with a scripted model (no network) runs turns with tool calls over it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Agent, Runner, tool } from "@openai/agents";
import { z } from "zod";
import { CHAT_PINNING, Client } from "@agentmem/client";
import { AgentmemSession } from "@agentmem/client/openai-agents";
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

const usage = { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/**
 * ScriptedModel is a Model of the Agents SDK that answers each call with
 * the next of its scripted outputs and records the input it was given.
 */
class ScriptedModel {
  constructor(outputs) {
    this.outputs = outputs;
    this.inputs = [];
  }
  async getResponse(request) {
    this.inputs.push(structuredClone(request.input));
    const output = this.outputs.shift();
    if (!output) throw new Error("the script has no more outputs");
    return { usage, output, responseId: `resp_${this.inputs.length}` };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error("not used: the test runs without streaming");
  }
}

const call = (id, name, args) => ({ type: "function_call", id: `fc_${id}`, callId: id, name, arguments: JSON.stringify(args), status: "completed" });
const say = (id, text) => ({
  type: "message",
  id,
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text }],
});

describe("AgentmemSession", () => {
  test("items of every type round-trip exactly, in order", async () => {
    const session = new AgentmemSession({ client, sessionId: "oa-items" });
    assert.equal(await session.getSessionId(), "oa-items");
    // Created with a chat's pinning: the first question is one among many.
    assert.deepEqual((await client.getSession("oa-items")).pinning, CHAT_PINNING);
    const items = [
      { role: "system", content: "Be concise." },
      { role: "user", content: "What is 2+2? Also weather." },
      { role: "user", content: [{ type: "input_text", text: "with parts" }, { type: "input_image", image: "https://example.com/a.png" }] },
      { type: "reasoning", id: "rs_1", content: [{ type: "input_text", text: "think" }], providerData: { encrypted: "abc" } },
      call("call_a", "calc", { expr: "2+2" }),
      // The call's output is added item by item, in a later request.
    ];
    await session.addItems(items);
    const later = [
      { type: "function_call_result", callId: "call_a", name: "calc", status: "completed", output: { type: "text", text: "4" } },
      say("msg_1", "4. The weather tool is next."),
      { type: "hosted_tool_call", name: "web_search_call", id: "ws_1", status: "completed", arguments: "{}" },
      { type: "unknown", providerData: { anything: [1, 2, { deep: null }] } },
      { role: "assistant", status: "completed", content: [{ type: "output_text", text: "ünïcødé ✓", annotations: [] }] },
    ];
    for (const it of later) await session.addItems([it]);
    const all = [...items, ...later];
    assert.deepEqual(await session.getItems(), all);
    assert.deepEqual(await session.getItems(3), all.slice(-3));
    assert.deepEqual(await session.getItems(100), all);

    // popItem returns the newest and removes it; the rest stays.
    assert.deepEqual(await session.popItem(), all.at(-1));
    assert.deepEqual(await session.popItem(), all.at(-2));
    assert.deepEqual(await session.getItems(), all.slice(0, -2));

    await session.clearSession();
    assert.deepEqual(await session.getItems(), []);
    assert.equal(await session.popItem(), undefined);
    await session.addItems([{ role: "user", content: "fresh start" }]);
    assert.deepEqual(await session.getItems(), [{ role: "user", content: "fresh start" }]);
  });

  test("getItems returns every item of a session larger than a page of the server's", async () => {
    const session = new AgentmemSession({ client, sessionId: "oa-many" });
    const items = Array.from({ length: 2105 }, (_, i) => ({ role: "user", content: `message ${i}` }));
    for (let i = 0; i < items.length; i += 1000) await session.addItems(items.slice(i, i + 1000));
    assert.deepEqual(await session.getItems(), items);
    assert.deepEqual(await session.getItems(1200), items.slice(-1200));
  });

  test("a Runner runs turns with tool calls over the session", async () => {
    const calls = [];
    const weather = tool({
      name: "get_weather",
      description: "The weather in a city.",
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        calls.push(city);
        return `${city}: 21C, clear`;
      },
    });
    const model = new ScriptedModel([
      // Turn 1: a tool call, then the answer.
      [call("call_1", "get_weather", { city: "Rome" })],
      [say("msg_1", "Rome is 21C and clear.")],
      // Turn 2: two tool calls at once, then the answer.
      [call("call_2", "get_weather", { city: "Oslo" }), call("call_3", "get_weather", { city: "Lima" })],
      [say("msg_2", "Oslo and Lima are both 21C.")],
      // Turn 3: a plain answer.
      [say("msg_3", "You asked about Rome, Oslo and Lima.")],
    ]);
    const agent = new Agent({ name: "weather", instructions: "Answer about the weather.", model, tools: [weather] });
    const runner = new Runner({ tracingDisabled: true });
    const session = new AgentmemSession({ client, sessionId: "oa-runner" });

    const r1 = await runner.run(agent, "Weather in Rome?", { session });
    assert.equal(r1.finalOutput, "Rome is 21C and clear.");
    const after1 = await session.getItems();
    const r2 = await runner.run(agent, "And Oslo and Lima?", { session });
    assert.equal(r2.finalOutput, "Oslo and Lima are both 21C.");
    const after2 = await session.getItems();
    const r3 = await runner.run(agent, "Which cities did I ask about?", { session });
    assert.equal(r3.finalOutput, "You asked about Rome, Oslo and Lima.");
    const after3 = await session.getItems();
    assert.deepEqual(calls, ["Rome", "Oslo", "Lima"]);

    // Each turn's first model call saw the session's items so far and the
    // new input; each later call also that turn's new items.
    const user = (text) => ({ type: "message", role: "user", content: text });
    assert.deepEqual(model.inputs[0], [user("Weather in Rome?")]);
    assert.equal(model.inputs[1].length, 3); // user, call, result
    assert.equal(model.inputs[1][1].type, "function_call");
    assert.equal(model.inputs[1][2].type, "function_call_result");
    assert.equal(model.inputs[1][2].callId, "call_1");
    assert.deepEqual(model.inputs[2], [...after1, user("And Oslo and Lima?")]);
    assert.deepEqual(model.inputs[4], [...after2, user("Which cities did I ask about?")]);

    // What the session holds: every turn's items, in order.
    const kinds = (items) => items.map((i) => i.type === "message" || i.role ? `${i.role}` : `${i.type}:${i.callId}`);
    assert.deepEqual(kinds(after1), ["user", "function_call:call_1", "function_call_result:call_1", "assistant"]);
    assert.deepEqual(after2.slice(0, after1.length), after1);
    assert.deepEqual(kinds(after2.slice(after1.length)), [
      "user",
      "function_call:call_2",
      "function_call:call_3",
      "function_call_result:call_2",
      "function_call_result:call_3",
      "assistant",
    ]);
    assert.deepEqual(kinds(after3.slice(after2.length)), ["user", "assistant"]);
    assert.equal(after3.at(-1).content[0].text, "You asked about Rome, Oslo and Lima.");
    assert.equal(after2.find((i) => i.callId === "call_3" && i.type === "function_call_result").output.text, "Lima: 21C, clear");

    // The session is an agentmem session: its context has the conversation.
    const ctx = await client.getContext("oa-runner", { format: "openai" });
    assert.match(JSON.stringify(ctx.messages), /Oslo and Lima are both 21C/);
  });

  test("the runner's compaction hook compacts the session with agentmem's strategy", async () => {
    const model = new ScriptedModel([1, 2, 3, 4].map((i) => [say(`m${i}`, `answer ${i}`)]));
    const agent = new Agent({ name: "compacting", instructions: "x", model });
    const runner = new Runner({ tracingDisabled: true });
    // keep_last_n: a chat pins no question (CHAT_PINNING), so the
    // newest two steps stay.
    const session = new AgentmemSession({ client, sessionId: "oa-compact", compaction: { strategy: "keep_last_n", n: 2 } });
    const user = (text) => ({ type: "message", role: "user", content: text });
    for (let i = 1; i <= 4; i++) {
      await runner.run(agent, `q${i}`, { session });
      const items = await session.getItems();
      assert.equal(session.lastCompaction.changed, i > 1);
      assert.deepEqual(items, [user(`q${i}`), say(`m${i}`, `answer ${i}`)]);
    }
    // The last turn's model saw the compacted history.
    assert.deepEqual(model.inputs[3], [user("q3"), say("m3", "answer 3"), user("q4")]);
    // The log keeps every turn.
    const log = await client.readSteps("oa-compact");
    assert.equal(log.steps.length, 8);
    // Without the option the hook does nothing.
    const plain = new AgentmemSession({ client, sessionId: "oa-compact" });
    assert.equal(await plain.runCompaction({ force: true }), null);
    assert.equal((await plain.getItems()).length, 2);
  });
});
