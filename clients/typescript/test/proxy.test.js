// The proxy (POST /v1/chat/completions, POST /v1/messages) with the
// official OpenAI and Anthropic SDKs, unmodified: only their base URL and
// a default header point them at the real agentmem binary, which forwards
// to a stand-in provider (proxy/proxytest). Each runs a 30-request
// tool-using conversation with large tool results, streamed and not,
// resending its whole history each time; the stand-in checks every body
// it received (the budget counted with the exact tokenizer, the system
// prompt kept, and the first task too in the OpenAI session, which pins it
// with X-Agentmem-Pinning, while the Anthropic one has the proxy's default
// pinning, a chat's; every tool call answered), the session holds every
// message exactly once, and the streamed text is the stand-in's.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { Client } from "@agentmem/client";
import { startServer, startStandin } from "./helpers.js";

const systemPrompt = "You are a careful research agent. Use the lookup tool.";
const firstTask = "Find out everything about the history of the transistor.";
const budget = 3000;
const requests = 30;
const bigResult = (n) => `Result line ${n} of the lookup: some long text about transistors. `.repeat(60);

let standin;
let server;
let client;
before(async () => {
  standin = await startStandin();
  server = await startServer("--upstream-base-url", `${standin.url}/v1`, "--anthropic-base-url", standin.url);
  client = new Client({ baseUrl: server.baseUrl });
});
after(async () => {
  await server?.stop();
  await standin?.stop();
});

/** replies returns what the stand-in answered, in order. */
async function replies() {
  return (await fetch(`${standin.url}/_proxytest/replies`)).json();
}

/**
 * checks returns the stand-in's check of every request it received since
 * `from`, with `task` kept second (none: the first task need not be kept).
 */
async function checks(from, task) {
  const res = await fetch(`${standin.url}/_proxytest/check`, {
    method: "POST",
    body: JSON.stringify({ budget, tokenizer: "o200k_base", system: systemPrompt, task }),
  });
  return (await res.json()).slice(from);
}

/** heldTurns returns the session's steps as the API lists them. */
async function heldContext(session, format) {
  const ctx = await client.getContext(session, { format });
  return ctx;
}

describe("proxy", () => {
  test("the openai SDK runs a tool-using conversation through agentmem", async () => {
    const session = "ts-openai";
    const from = (await replies()).length;
    const openai = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: "sk-test", maxRetries: 0,
      defaultHeaders: {
        "X-Agentmem-Session": session,
        "X-Agentmem-Budget": String(budget),
        "X-Agentmem-Pinning": JSON.stringify({ system_prompts: true, first_task: true, summary: true }),
      } });
    const messages = [{ role: "system", content: systemPrompt }, { role: "user", content: firstTask }];
    const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: { query: { type: "string" } } } } }];
    let lastHeaders;
    for (let n = 0; n < requests; n++) {
      let message;
      if (n % 2 === 1) {
        const stream = openai.chat.completions.stream({ model: "gpt-4o", messages, tools });
        let streamed = "";
        stream.on("content", (delta) => { streamed += delta; });
        const done = await stream.finalChatCompletion();
        message = done.choices[0].message;
        assert.equal(streamed, message.content ?? "", `request ${n}: the streamed text`);
      } else {
        const { data, response } = await openai.chat.completions.create({ model: "gpt-4o", messages, tools }).withResponse();
        lastHeaders = response.headers;
        message = data.choices[0].message;
      }
      const said = (await replies())[from + n];
      assert.equal(message.content ?? "", said.text, `request ${n}: the text is the stand-in's`);
      messages.push(message);
      if (message.tool_calls?.length) {
        for (const call of message.tool_calls) messages.push({ role: "tool", tool_call_id: call.id, content: bigResult(n) });
      } else {
        messages.push({ role: "user", content: `Good. Now question ${n}.` });
      }
    }
    assert.ok(Number(lastHeaders.get("x-agentmem-context-tokens")) <= budget);
    for (const [n, c] of (await checks(from, firstTask)).entries()) assert.equal(c.error, undefined, `request ${n}: ${c.error}`);
    // The session holds every message once: its context without a budget
    // is the client's history but the last message, not sent yet.
    const ctx = await heldContext(session, "openai");
    const strip = (m) => {
      const out = { role: m.role, content: m.content ?? null };
      if (m.tool_calls?.length) out.tool_calls = m.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.function.name, arguments: c.function.arguments } }));
      if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
      if (out.content === null && !out.tool_calls) out.content = "";
      return out;
    };
    assert.deepEqual(ctx.messages.map(strip), messages.slice(0, -1).map(strip));
  });

  test("the Anthropic SDK runs a tool-using conversation through agentmem", async () => {
    const session = "ts-anthropic";
    const from = (await replies()).length;
    const anthropic = new Anthropic({ baseURL: server.baseUrl, apiKey: "sk-ant-test", maxRetries: 0,
      defaultHeaders: { "X-Agentmem-Session": session, "X-Agentmem-Budget": String(budget) } });
    const messages = [{ role: "user", content: firstTask }];
    const tools = [{ name: "lookup", input_schema: { type: "object", properties: { query: { type: "string" } } } }];
    for (let n = 0; n < requests; n++) {
      const params = { model: "claude-proxy-test", max_tokens: 1024, system: systemPrompt, messages, tools };
      let message;
      if (n % 2 === 0) {
        const stream = anthropic.messages.stream(params);
        let streamed = "";
        stream.on("text", (delta) => { streamed += delta; });
        message = await stream.finalMessage();
        const text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
        assert.equal(streamed, text, `request ${n}: the streamed text`);
      } else {
        message = await anthropic.messages.create(params);
      }
      const said = (await replies())[from + n];
      const text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
      assert.equal(text, said.text, `request ${n}: the text is the stand-in's`);
      messages.push({ role: "assistant", content: message.content });
      const calls = message.content.filter((b) => b.type === "tool_use");
      if (calls.length) {
        messages.push({ role: "user", content: calls.map((c) => ({ type: "tool_result", tool_use_id: c.id, content: bigResult(n) })) });
      } else {
        messages.push({ role: "user", content: [{ type: "text", text: `Now question ${n}.` }] });
      }
    }
    for (const [n, c] of (await checks(from, "")).entries()) assert.equal(c.error, undefined, `request ${n}: ${c.error}`);
    // The session holds every message once: as Anthropic messages, its
    // context without a budget is the client's history but the last.
    const ctx = await heldContext(session, "anthropic");
    const blocks = (content) => (typeof content === "string" ? [{ type: "text", text: content }] : content).map((b) => {
      switch (b.type) {
        case "text": return { type: "text", text: b.text };
        case "tool_use": return { type: "tool_use", id: b.id, name: b.name, input: b.input };
        case "tool_result": return { type: "tool_result", tool_use_id: b.tool_use_id, content: b.content };
      }
      return b;
    });
    assert.equal(ctx.messages.system, systemPrompt);
    assert.deepEqual(ctx.messages.messages.map((m) => ({ role: m.role, content: blocks(m.content) })),
      messages.slice(0, -1).map((m) => ({ role: m.role, content: blocks(m.content) })));
  });
});
