// The client against the real agentmem binary: every method, the typed
// errors, and the retries after a 503.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  AgentmemError,
  BudgetTooSmallError,
  CHAT_PINNING,
  Client,
  ConflictError,
  ConnectionError,
  DEFAULT_PINNING,
  ExtractionFailedError,
  IdempotencyKeyReusedError,
  InvalidError,
  NoMatchError,
  NotConfiguredError,
  NotFoundError,
  NothingToPopError,
  OverLimitError,
  ReadOnlyError,
  ToolResultConflictError,
  UnavailableError,
  errorClasses,
} from "@agentmem/client";
import { startExtractionModel, startFaultProxy, startServer } from "./helpers.js";

let server;
let client;
before(async () => {
  server = await startServer();
  client = new Client({ baseUrl: server.baseUrl });
});
after(async () => {
  await server?.stop();
});

describe("sessions", () => {
  test("create, get, list, fork, delete", async () => {
    const s = await client.createSession({ id: "sess-1", user_id: "u1", agent: "a1", metadata: { k: "v" } });
    assert.equal(s.id, "sess-1");
    assert.equal(s.user_id, "u1");
    assert.equal(s.last_seq, 0);
    assert.deepEqual((await client.getSession("sess-1")).metadata, { k: "v" });
    const anon = await client.createSession();
    assert.match(anon.id, /^[0-9a-f-]{36}$/);

    await client.appendMessages("sess-1", [
      { role: "user", content: "one" },
      { role: "assistant", content: "two" },
    ]);
    const branch = await client.forkSession("sess-1", { id: "sess-1-b", at_seq: 1 });
    assert.equal(branch.parent_id, "sess-1");
    assert.equal(branch.fork_seq, 1);
    const read = await client.readSteps("sess-1-b");
    assert.deepEqual(read.steps.map((s) => s.type), ["task"]);

    const page = await client.listSessions({ user_id: "u1" });
    assert.deepEqual(page.sessions.map((s) => s.id), ["sess-1-b", "sess-1"], "newest first; the branch keeps the user");
    // allSessions follows the pages.
    for (let i = 0; i < 3; i++) await client.createSession({ id: `paged-${i}`, agent: "pager" });
    const ids = [];
    for await (const s of client.allSessions({ agent: "pager", page_size: 2 })) ids.push(s.id);
    assert.deepEqual(ids.sort(), ["paged-0", "paged-1", "paged-2"]);

    await client.deleteSession("sess-1-b");
    await assert.rejects(client.getSession("sess-1-b"), (e) => e instanceof NotFoundError && e.status === 404 && e.code === "not_found");
  });

  test("a taken ID is a ConflictError; ensureSession takes it as there", async () => {
    await client.createSession({ id: "taken" });
    await assert.rejects(client.createSession({ id: "taken" }), (e) => e instanceof ConflictError && e.code === "conflict");
    assert.equal(await client.ensureSession({ id: "taken", user_id: "ignored" }), false);
    assert.equal((await client.getSession("taken")).user_id, undefined);
    assert.equal(await client.ensureSession({ id: "ensured", user_id: "u9" }), true);
    assert.equal((await client.getSession("ensured")).user_id, "u9");
    await assert.rejects(client.ensureSession({ id: ".." }), InvalidError);
  });

  test("settings: pinning and auto_compact on create and fork, as they apply", async () => {
    const s = await client.createSession({ id: "set-chat", pinning: CHAT_PINNING, auto_compact: { max_tokens: 8000 } });
    assert.deepEqual(s.pinning, { system_prompts: true, first_task: false, tasks: false, summary: true });
    assert.deepEqual(s.auto_compact, { max_tokens: 8000, target_tokens: 4000, keep_recent: 6, summarizer: "extractive" });
    assert.deepEqual(await client.getSession("set-chat"), s);
    const plain = await client.createSession({ id: "set-plain" });
    assert.deepEqual([plain.pinning, plain.auto_compact], [DEFAULT_PINNING, undefined]);
    await client.appendMessages("set-chat", [{ role: "user", content: "hi" }]);
    assert.deepEqual((await client.forkSession("set-chat", { id: "set-b" })).pinning, CHAT_PINNING, "a fork takes its parent's");
    const own = await client.forkSession("set-chat", { id: "set-b2", pinning: { tasks: true }, auto_compact: { max_tokens: 50 } });
    assert.deepEqual([own.pinning.tasks, own.pinning.system_prompts, own.auto_compact.max_tokens], [true, false, 50]);
    await assert.rejects(
      client.createSession({ id: "set-bad", auto_compact: { max_tokens: 100, target_tokens: 100 } }),
      (e) => e instanceof InvalidError && e.field === "auto_compact.target_tokens",
    );
  });

  test("bad input is an InvalidError naming the field", async () => {
    await assert.rejects(client.createSession({ id: "no\ncontrol characters" }), (e) => e instanceof InvalidError && e.field === "id");
    await assert.rejects(client.readSteps("taken", { limit: 0 }), (e) => e instanceof InvalidError && e.field === "limit");
  });

  test("any text without control characters is a session ID, percent-encoded in paths", async () => {
    for (const id of ["user@example.com", "Research Agent", "a/b ü?x=1#frag%", "../x"]) {
      assert.equal((await client.createSession({ id, user_id: id })).id, id);
      assert.equal((await client.getSession(id)).id, id);
      await client.appendMessages(id, [
        { role: "user", content: "hello" },
        { role: "assistant", content: "hi" },
      ]);
      assert.equal((await client.getContext(id)).last_seq, 2);
      assert.equal((await client.readSteps(id)).steps.length, 2);
      const branch = await client.forkSession(id, { id: `${id} (branch)` });
      assert.equal(branch.parent_id, id);
      assert.equal((await client.pop(id)).message.content, "hi");
      await client.appendItems(id, [{ role: "user", content: "again" }]);
      assert.equal((await client.getItems(id)).length, 2);
      await client.compact(id, { strategy: "keep_last_n", n: 1 });
      const page = await client.listSessions({ user_id: id });
      assert.deepEqual(page.sessions.map((s) => s.id).sort(), [id, `${id} (branch)`].sort());
      await client.deleteSession(branch.id);
      await client.deleteSession(id);
      await assert.rejects(client.getSession(id), NotFoundError);
    }
  });
});

describe("steps and messages", () => {
  test("appendSteps with an Idempotency-Key stores once; another body is refused", async () => {
    await client.createSession({ id: "steps" });
    const body = [
      { type: "system_prompt", content: "Be brief." },
      { type: "task", task: "Sum 2 and 2." },
    ];
    const a = await client.appendSteps("steps", body, { idempotencyKey: "k1" });
    assert.deepEqual(a.seqs, [1, 2]);
    const again = await client.appendSteps("steps", body, { idempotencyKey: "k1" });
    assert.deepEqual(again.seqs, [1, 2]);
    assert.equal(again.last_seq, 2);
    await assert.rejects(
      client.appendSteps("steps", [{ type: "task", task: "Other" }], { idempotencyKey: "k1" }),
      (e) => e instanceof IdempotencyKeyReusedError && e instanceof ConflictError && e.status === 409,
    );
    const read = await client.readSteps("steps");
    assert.deepEqual(read.steps.map((s) => s.id), ["k1/0", "k1/1"]);
  });

  test("If-Match that does not hold is a ConflictError with the last sequence number", async () => {
    await client.createSession({ id: "ifmatch" });
    await client.appendSteps("ifmatch", { type: "task", task: "t" });
    await assert.rejects(client.appendSteps("ifmatch", { type: "task", task: "u" }, { ifMatch: 0 }), (e) => e instanceof ConflictError && e.lastSeq === 1);
    const ok = await client.appendSteps("ifmatch", { type: "task", task: "u" }, { ifMatch: 1 });
    assert.equal(ok.last_seq, 2);
  });

  test("messages item by item: a pending tool call completed later, with IDs", async () => {
    await client.createSession({ id: "msgs" });
    await client.appendMessages("msgs", { id: "u1", role: "user", content: "Weather in Paris?" });
    await client.appendMessages("msgs", {
      id: "a1",
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }],
    });
    let ws = await client.readWorkingSet("msgs");
    assert.equal(ws.length, 2);
    assert.equal(ws[1].type, "action");
    assert.equal(ws[1].results, undefined, "the action is pending");
    const ctx = await client.getContext("msgs");
    assert.deepEqual(ctx.pending, [{ seq: 2, tool_call_ids: ["call_1"] }]);

    const r = await client.appendMessages("msgs", { id: "t1", role: "tool", tool_call_id: "call_1", content: "sunny" }, { idempotencyKey: "tool-1" });
    assert.deepEqual(r.updated, [2]);
    ws = await client.readWorkingSet("msgs");
    assert.deepEqual(
      ws.map((s) => s.id),
      ["u1", "a1"],
    );
    assert.deepEqual(ws[1].results, [{ call_id: "call_1", id: "t1", content: "sunny" }]);
    await assert.rejects(
      client.appendMessages("msgs", { role: "tool", tool_call_id: "call_1", content: "rainy" }),
      (e) => e instanceof ToolResultConflictError && e.code === "tool_result_conflict",
    );
    await assert.rejects(
      client.appendMessages("msgs", { role: "tool", tool_call_id: "nope", content: "x" }),
      (e) => e instanceof InvalidError && e.field === "tool_call_id",
    );
  });

  test("pop gives a tool result back with its metadata and images", async () => {
    await client.createSession({ id: "pop-meta" });
    await client.appendMessages("pop-meta", [
      { role: "user", content: "What does the page show?" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "screenshot", arguments: "{}" } }] },
    ]);
    const shot = { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } };
    await client.appendMessages("pop-meta", { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "the page" }, shot], metadata: { source: "browser" } });
    const p = await client.pop("pop-meta");
    assert.equal(p.message.tool_call_id, "c1");
    assert.deepEqual(p.message.content[1], shot);
    assert.deepEqual(p.metadata, { source: "browser" });
  });

  test("pop removes the newest message; an empty session is NothingToPopError", async () => {
    await client.createSession({ id: "pop" });
    await client.appendMessages("pop", [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
    ]);
    const p = await client.pop("pop");
    assert.deepEqual(p.message, { role: "assistant", content: "hello" });
    assert.equal(p.removed, true);
    const p2 = await client.pop("pop", { ifMatch: p.last_seq });
    assert.equal(p2.message.content, "hi");
    await assert.rejects(client.pop("pop"), (e) => e instanceof NothingToPopError && e instanceof ConflictError);
    assert.deepEqual(await client.readWorkingSet("pop"), []);
  });

  test("readWorkingSet follows pages and compactions", async () => {
    await client.createSession({ id: "long" });
    const steps = [];
    for (let i = 0; i < 1200; i++) steps.push({ type: "task", task: `t${i}` });
    await client.appendSteps("long", steps.slice(0, 1000));
    await client.appendSteps("long", steps.slice(1000));
    const c = await client.compact("long", { strategy: "keep_last_n", n: 5 });
    assert.equal(c.changed, true);
    const ws = await client.readWorkingSet("long");
    // The first task is pinned; the last five are kept.
    assert.deepEqual(
      ws.map((s) => s.task),
      ["t0", "t1195", "t1196", "t1197", "t1198", "t1199"],
    );
  });
});

describe("context and compaction", () => {
  test("context in a format, within a budget, with facts", async () => {
    await client.createSession({ id: "ctx", user_id: "ctx-user" });
    await client.remember("ctx-user", { text: "The user prefers metric units." });
    await client.appendMessages("ctx", [
      { role: "system", content: "You are helpful." },
      { role: "user", content: "How far is the moon?" },
      { role: "assistant", content: "About 384,400 km." },
    ]);
    const ctx = await client.getContext("ctx", { budget: 4000, format: "anthropic", facts: 5 });
    assert.equal(ctx.format, "anthropic");
    assert.ok(ctx.tokens > 0 && ctx.tokens <= 4000);
    assert.match(JSON.stringify(ctx.messages), /metric units/);
    assert.match(JSON.stringify(ctx.messages), /384,400/);
    await assert.rejects(
      client.getContext("ctx", { budget: 3 }),
      (e) => e instanceof BudgetTooSmallError && e.budget === 3 && e.required > 3,
    );
  });

  test("compact with a strategy", async () => {
    await client.createSession({ id: "cmp" });
    for (let i = 0; i < 6; i++) {
      await client.appendMessages("cmp", [
        { role: "user", content: `question ${i}` },
        { role: "assistant", content: `answer ${i}` },
      ]);
    }
    const r = await client.compact("cmp", { strategy: "summarize", keep_recent: 2, summarizer: "extractive" });
    assert.equal(r.changed, true);
    assert.ok(r.after < r.before);
    const ws = await client.readWorkingSet("cmp");
    assert.ok(ws.some((s) => s.type === "summary"));
    await assert.rejects(client.compact("cmp", { strategy: "keep_last_n" }), (e) => e instanceof InvalidError);
  });
});

describe("recall and facts", () => {
  test("recall: upsert, search, get, delete", async () => {
    const ids = await client.upsertRecall([
      { id: "doc-1", text: "The deploy runbook: roll back with make rollback.", metadata: { kind: "runbook" } },
      { id: "doc-2", text: "Lunch is at noon." },
    ]);
    assert.deepEqual(ids, ["doc-1", "doc-2"]);
    const found = await client.searchRecall({ q: "how do I roll back a deploy", k: 1, fresh: true });
    assert.equal(found.hits[0]?.id, "doc-1");
    // A repeated parameter (filter) and the TF-IDF similarity.
    const filtered = await client.searchRecall({ q: "roll back the deploy at noon", filter: ["kind:runbook"], similarity: "tfidf", fresh: true });
    assert.deepEqual(filtered.hits.map((h) => h.id), ["doc-1"]);
    const none = await client.searchRecall({ q: "roll back the deploy at noon", filter: ["kind:runbook", "team:ops"], fresh: true });
    assert.deepEqual(none.hits, []);
    assert.equal((await client.getRecall("doc-1")).metadata?.kind, "runbook");
    await client.deleteRecall("doc-1");
    await assert.rejects(client.getRecall("doc-1"), NotFoundError);
  });

  test("facts: remember, reinforce, search, get, forget", async () => {
    const a = await client.remember("u-facts", { text: "Lives in Lyon.", confidence: 0.8 });
    assert.equal(a.outcome, "added");
    const b = await client.remember("u-facts", { text: "Lives in Lyon." });
    assert.equal(b.outcome, "reinforced");
    await client.remember("u-facts", { text: "Has a cat named Miso." });
    const hits = await client.searchFacts("u-facts", { q: "where does the user live", k: 1 });
    assert.equal(hits[0]?.text, "Lives in Lyon.");
    assert.equal((await client.getFact("u-facts", a.fact.id)).text, "Lives in Lyon.");
    await client.forget("u-facts", a.fact.id, { reason: "moved" });
    const left = await client.searchFacts("u-facts");
    assert.deepEqual(left.map((f) => f.text), ["Has a cat named Miso."]);
  });

  test("forgetUser erases the user's sessions, facts and documents, and only theirs", async () => {
    await client.createSession({ id: "fu-s1", user_id: "u-leaver" });
    await client.appendMessages("fu-s1", [{ role: "user", content: "okapi sightings" }]);
    await client.remember("u-leaver", { text: "Likes okapis." });
    await client.remember("u-stayer", { text: "Likes okapis too." });
    const out = await client.forgetUser("u-leaver", { reason: "asked" });
    assert.equal(out.sessions, 1);
    assert.equal(out.facts, 1);
    assert.ok(out.documents >= 1);
    assert.deepEqual((await client.listSessions({ user_id: "u-leaver" })).sessions, []);
    assert.deepEqual(await client.searchFacts("u-leaver"), []);
    assert.equal((await client.searchFacts("u-stayer")).length, 1);
    assert.deepEqual(await client.forgetUser("u-leaver"), { sessions: 0, facts: 0, documents: 0, blocks: 0 });
  });

  test("facts in time: supersede closes, as_of, filter, update, history", async () => {
    const berlin = await client.remember("u-time", { text: "Lives in Berlin.", valid_from: "2020-05-01T00:00:00Z", metadata: { topic: "home" } });
    assert.equal(berlin.fact.valid_from, "2020-05-01T00:00:00Z");
    const paris = await client.remember("u-time", { text: "Lives in Paris.", supersedes: berlin.fact.id, valid_from: "2025-06-01T00:00:00Z" });
    assert.equal(paris.outcome, "superseded");
    assert.equal(paris.previous?.valid_to, "2025-06-01T00:00:00Z");
    await client.remember("u-time", { text: "Drinks tea.", metadata: { topic: "food" } });
    const then = await client.searchFacts("u-time", { as_of: "2024-01-01T00:00:00Z" });
    assert.deepEqual(then.map((f) => f.id), [berlin.fact.id]);
    const food = await client.searchFacts("u-time", { filter: ["topic:food"] });
    assert.deepEqual(food.map((f) => f.text), ["Drinks tea."]);
    const f = await client.updateFact("u-time", paris.fact.id, { text: "Lives in Paris, 11th.", metadata: { city: "paris" }, reason: "precise" });
    assert.equal(f.text, "Lives in Paris, 11th.");
    const reopened = await client.updateFact("u-time", paris.fact.id, { valid_to: null, metadata: null });
    assert.equal(reopened.metadata, undefined);
    await assert.rejects(client.updateFact("u-time", paris.fact.id, { confidence: 2 }), (e) => e instanceof InvalidError && e.field === "confidence");
    const history = await client.factHistory("u-time", paris.fact.id);
    assert.deepEqual(history.map((c) => c.action), ["added", "updated", "updated"]);
    assert.equal(history[1]?.before?.text, "Lives in Paris.");
    assert.equal(history[1]?.after?.metadata?.city, "paris");
    const old = await client.factHistory("u-time", berlin.fact.id);
    assert.deepEqual(old.map((c) => c.action), ["added", "superseded"]);
  });
});

describe("fact extraction", () => {
  // A server with a model (a stand-in); the shared one has none.
  let model;
  let withModel;
  let c;
  before(async () => {
    model = await startExtractionModel();
    withModel = await startServer("--llm-base-url", model.baseUrl, "--llm-model", "stand-in");
    c = new Client({ baseUrl: withModel.baseUrl });
  });
  after(async () => {
    await withModel?.stop();
    await model?.stop();
  });

  test("extractFacts: add, supersede, nothing; a failing model writes nothing", async () => {
    const first = await c.extractFacts("u-extract", {
      messages: [{ role: "user", content: "Hi! I live in Berlin." }, { role: "assistant", content: "Nice." }],
      source: { agent: "support-bot" },
    });
    assert.equal(first.decisions.length, 1);
    const add = first.decisions[0];
    assert.equal(add.action, "add");
    assert.equal(add.outcome, "added");
    assert.equal(add.fact?.text, "Lives in Berlin.");
    assert.equal(add.fact?.source?.agent, "support-bot");
    const second = await c.extractFacts("u-extract", { messages: [{ role: "user", content: "I live in Paris now." }] });
    const sup = second.decisions[0];
    assert.equal(sup.outcome, "superseded");
    assert.equal(sup.fact?.text, "Lives in Paris.");
    assert.equal(sup.previous?.id, add.fact?.id);
    assert.equal(sup.previous?.superseded_by, sup.fact?.id);
    assert.deepEqual((await c.extractFacts("u-extract", { messages: [{ role: "user", content: "What time is it?" }] })).decisions, []);
    model.down = true;
    try {
      const err = await c.extractFacts("u-extract", { messages: [{ role: "user", content: "I live in Rome." }] }).catch((e) => e);
      assert.ok(err instanceof ExtractionFailedError, String(err));
      assert.equal(err.status, 502);
      assert.equal(err.field, "extractor");
    } finally {
      model.down = false;
    }
    assert.deepEqual((await c.searchFacts("u-extract")).map((f) => f.text), ["Lives in Paris."]);
    await assert.rejects(c.extractFacts("u-extract", { messages: [] }), (e) => e instanceof InvalidError && e.field === "messages");
  });

  test("extract_facts on create and fork, as given; a branch inherits it", async () => {
    for (const [i, value] of [true, false, undefined].entries()) {
      const s = await c.createSession({ id: `xf-${i}`, user_id: "alice", extract_facts: value });
      assert.equal(s.extract_facts, value);
      assert.equal((await c.getSession(`xf-${i}`)).extract_facts, value);
      assert.equal((await c.forkSession(`xf-${i}`)).extract_facts, value);
    }
    assert.equal((await c.forkSession("xf-0", { extract_facts: false })).extract_facts, false);
    await assert.rejects(c.createSession({ id: "xf-nouser", extract_facts: true }), (e) => e instanceof InvalidError && e.field === "extract_facts");
  });

  test("a server without a model: extractFacts is NotConfiguredError, opting in an InvalidError", async () => {
    await assert.rejects(client.extractFacts("alice", { messages: [{ role: "user", content: "I live in Oslo." }] }), NotConfiguredError);
    await assert.rejects(client.createSession({ id: "xf-off", user_id: "alice", extract_facts: true }), (e) => e instanceof InvalidError && e.field === "extract_facts");
    await assert.rejects(client.getSession("xf-off"), NotFoundError);
    assert.equal((await client.createSession({ id: "xf-off", user_id: "alice", extract_facts: false })).extract_facts, false);
  });
});

describe("memory blocks", () => {
  test("put, get, append, replace, list, history, delete; shown in the context", async () => {
    const ann = { user: "u-blocks" };
    let b = await client.putBlock(ann, "human", { value: "Name: Ann.", limit: 40, description: "the user", by: "app" });
    assert.deepEqual(
      [b.label, b.owner, b.owner_id, b.value, b.limit, b.chars, b.version, b.description, b.updated_by],
      ["human", "user", "u-blocks", "Name: Ann.", 40, 10, 1, "the user", "app"],
    );
    assert.equal((await client.getBlock(ann, "human")).value, "Name: Ann.");
    b = await client.appendBlock(ann, "human", { text: "Likes trains.", by: "agent" });
    assert.deepEqual([b.value, b.version], ["Name: Ann.\nLikes trains.", 2]);
    b = await client.replaceBlock(ann, "human", { old: "trains", new: "night trains" }, { ifMatch: 2 });
    assert.deepEqual([b.value, b.version, b.limit], ["Name: Ann.\nLikes night trains.", 3, 40]);
    b = await client.putBlock(ann, "human", { value: "Name: Ann." }, { ifMatch: 3 }); // a rewrite keeps the limit
    assert.deepEqual([b.version, b.limit], [4, 40]);
    const history = await client.blockHistory(ann, "human");
    assert.deepEqual(history.map((h) => [h.version, h.action]), [[1, "created"], [2, "appended"], [3, "replaced"], [4, "set"]]);
    assert.deepEqual([history[1]?.by, history[1]?.before, history[1]?.after], ["agent", "Name: Ann.", "Name: Ann.\nLikes trains."]);

    const session = { session: "sess-blocks" };
    await client.createSession({ id: "sess-blocks", user_id: "u-blocks" });
    await client.putBlock(session, "task", { value: "Plan a trip.", read_only: true });
    assert.deepEqual((await client.listBlocks(session)).map((x) => x.label), ["task"]);
    assert.deepEqual((await client.listBlocks(ann)).map((x) => x.label), ["human"]);
    await client.appendMessages("sess-blocks", [{ role: "system", content: "You plan trips." }, { role: "user", content: "Hi" }]);
    const ctx = await client.getContext("sess-blocks", { budget: 4000 });
    assert.deepEqual(ctx.blocks?.map((x) => [x.label, x.owner, x.version]), [["human", "user", 4], ["task", "session", 1]]);

    await client.deleteBlock(ann, "human", { ifMatch: 4 });
    assert.deepEqual(await client.listBlocks(ann), []);
    await assert.rejects(client.getBlock(ann, "human"), NotFoundError);
    await assert.rejects(client.listBlocks({ session: "no-such-session" }), NotFoundError);
    await assert.rejects(client.getBlock({}, "human"), TypeError);
    await assert.rejects(client.listBlocks({ user: "u-blocks", session: "sess-blocks" }), TypeError);
  });

  test("refusals are typed and change nothing", async () => {
    const u = { user: "u-refused" };
    await client.putBlock(u, "notes", { value: "one two two", limit: 20 });
    await assert.rejects(client.appendBlock(u, "notes", { text: "x".repeat(20) }), (e) => e instanceof OverLimitError && e.status === 422 && e.field === "text");
    await assert.rejects(client.replaceBlock(u, "notes", { old: "two", new: "three" }), (e) => e instanceof NoMatchError && e.status === 422 && e.field === "old");
    await assert.rejects(client.replaceBlock(u, "notes", { old: "four", new: "five" }), NoMatchError);
    await assert.rejects(
      client.putBlock(u, "notes", { value: "new" }, { ifMatch: 7 }),
      (e) => e.constructor === ConflictError && e.code === "conflict" && e.field === "If-Match",
    );
    await assert.rejects(client.deleteBlock(u, "notes", { ifMatch: 2 }), ConflictError);
    await client.putBlock(u, "notes", { value: "locked", read_only: true });
    await assert.rejects(client.appendBlock(u, "notes", { text: "more" }), (e) => e instanceof ReadOnlyError && e instanceof ConflictError && e.status === 409);
    await assert.rejects(client.replaceBlock(u, "notes", { old: "locked", new: "open" }), ReadOnlyError);
    await assert.rejects(client.putBlock(u, "not a label", { value: "x" }), (e) => e instanceof InvalidError && e.field === "label");
    const history = await client.blockHistory(u, "notes");
    assert.deepEqual(history.map((h) => [h.version, h.action]), [[1, "created"], [2, "set"]]);
    assert.equal((await client.getBlock(u, "notes")).value, "locked");
  });
});

describe("pages", () => {
  const many = (n, from = 0) => Array.from({ length: n }, (_, i) => ({ role: "user", content: `m${from + i}` }));
  const appendAll = async (id, items) => {
    for (let i = 0; i < items.length; i += 1000) await client.appendItems(id, items.slice(i, i + 1000));
  };

  test("getItems reads every page of a session with more items than a page", async () => {
    await client.createSession({ id: "pages-items" });
    const items = many(2005);
    await appendAll("pages-items", items);
    // The server answers one bounded page and a token.
    const first = await (await fetch(`${server.baseUrl}/v1/sessions/pages-items/items`)).json();
    assert.equal(first.items.length, 1000);
    assert.ok(first.next_page_token);
    assert.deepEqual(await client.getItems("pages-items"), items);
    assert.deepEqual(await client.getItems("pages-items", { limit: 1500 }), items.slice(-1500));
    assert.deepEqual(await client.getItems("pages-items", { limit: 30, page_size: 7 }), items.slice(-30));
    await assert.rejects(client.getItems("pages-items", { page_size: 0 }), (e) => e instanceof InvalidError && e.field === "page_size" && /from 1 to 10000/.test(e.message));
  });

  test("getItems starts over when a pop changes the items between pages", async () => {
    await client.createSession({ id: "pages-pop" });
    const items = many(25);
    await client.appendItems("pages-pop", items);
    let pages = 0;
    let popped = false;
    const c = new Client({
      baseUrl: server.baseUrl,
      fetch: async (url, init) => {
        const r = await fetch(url, init);
        if (String(url).includes("/pages-pop/items?") && r.ok) {
          pages++;
          if (!popped) {
            popped = true;
            await client.popItem("pages-pop");
          }
        }
        return r;
      },
    });
    assert.deepEqual(await c.getItems("pages-pop", { page_size: 10 }), items.slice(0, -1));
    assert.equal(pages, 4); // a page (the next is refused), then 3 from the first
  });

  test("searchFacts without q or k reads every page; listFacts is one", async () => {
    for (let i = 0; i < 105; i++) await client.remember("pages-collector", { text: `Collects stamp ${i}.` });
    const page = await client.listFacts("pages-collector", { page_size: 40 });
    assert.equal(page.facts.length, 40);
    assert.ok(page.next_page_token);
    const every = await client.searchFacts("pages-collector");
    assert.equal(new Set(every.map((f) => f.id)).size, 105);
    assert.equal((await client.searchFacts("pages-collector", { k: 3 })).length, 3);
  });

  test("damaged records of lists and searches go to onDamaged", async () => {
    // The server names a damaged record in the answer's damaged list
    // (server/damaged_test.go makes one); here the answers say so.
    const seen = [];
    const c = new Client({
      baseUrl: server.baseUrl,
      onDamaged: (d) => seen.push(d),
      fetch: async (url, init) => {
        const r = await fetch(url, init);
        const u = new URL(String(url));
        if (!["/v1/sessions", "/v1/recall/search", "/v1/users/pages-damaged/facts"].includes(u.pathname)) return r;
        const body = await r.json();
        body.damaged = [{ id: `bad-${u.pathname.split("/")[2]}`, error: "does not decode" }];
        return new Response(JSON.stringify(body), { status: r.status, headers: { "Content-Type": "application/json" } });
      },
    });
    const page = await c.listSessions();
    assert.deepEqual(page.damaged, [{ id: "bad-sessions", error: "does not decode" }]);
    await c.searchFacts("pages-damaged");
    await c.searchRecall({ q: "anything" });
    assert.deepEqual(seen, [
      { id: "bad-sessions", error: "does not decode", kind: "session" },
      { id: "bad-users", error: "does not decode", kind: "fact" },
      { id: "bad-recall", error: "does not decode", kind: "document" },
    ]);
  });
});

describe("errors and retries", () => {
  test("every error code of the document has its class", () => {
    for (const [code, cls] of Object.entries(errorClasses)) {
      const e = new cls({ status: 400, code, message: "m" });
      assert.ok(e instanceof AgentmemError, code);
      assert.equal(e.name, cls.name);
    }
  });

  test("a safe request is retried after 503 as Retry-After says, bounded", async () => {
    const proxy = await startFaultProxy(server.baseUrl);
    try {
      await client.createSession({ id: "retry" });
      // Retry-After: 1 is waited for.
      const c = new Client({ baseUrl: proxy.url, retries: 2 });
      proxy.failures = 2;
      proxy.retryAfter = "1";
      let t0 = performance.now();
      const s = await c.getSession("retry");
      assert.equal(s.id, "retry");
      assert.equal(proxy.requests, 3);
      assert.ok(performance.now() - t0 >= 1900, "waited Retry-After twice");

      // The wait is capped by maxRetryWaitMs, whatever Retry-After says.
      const capped = new Client({ baseUrl: proxy.url, retries: 2, maxRetryWaitMs: 20 });
      proxy.requests = 0;
      proxy.failures = 2;
      proxy.retryAfter = "3600";
      t0 = performance.now();
      await capped.appendMessages("retry", { role: "user", content: "once" }, { idempotencyKey: "r1" });
      assert.ok(performance.now() - t0 < 5000);
      assert.equal(proxy.requests, 3);
      assert.equal((await client.readSteps("retry")).steps.length, 1);

      // Out of retries: the 503 is thrown, typed, with its Retry-After.
      proxy.requests = 0;
      proxy.failures = 3;
      proxy.retryAfter = "7";
      await assert.rejects(capped.getSession("retry"), (e) => e instanceof UnavailableError && e.retryAfter === 7 && e.status === 503);
      assert.equal(proxy.requests, 3);

      // A request that is not safe to repeat is not retried.
      proxy.requests = 0;
      proxy.failures = 1;
      await assert.rejects(capped.appendMessages("retry", { role: "user", content: "x" }), UnavailableError);
      assert.equal(proxy.requests, 1);
      assert.equal((await client.readSteps("retry")).steps.length, 1);
    } finally {
      await proxy.close();
    }
  });

  test("an abort ends the wait between retries", async () => {
    const proxy = await startFaultProxy(server.baseUrl);
    try {
      const c = new Client({ baseUrl: proxy.url, retries: 5 });
      proxy.failures = 5;
      proxy.retryAfter = "5";
      const ctl = new AbortController();
      const t0 = performance.now();
      const p = c.getSession("taken", { signal: ctl.signal });
      // Abort once the first 503 has been sent (the client then waits 5 s).
      while (proxy.injected === 0) await new Promise((r) => setImmediate(r));
      ctl.abort();
      await assert.rejects(p, (e) => e.name === "AbortError");
      assert.ok(performance.now() - t0 < 4000, "did not wait out Retry-After");
      assert.equal(proxy.requests, 1);
    } finally {
      await proxy.close();
    }
  });

  test("no server is a ConnectionError", async () => {
    const proxy = await startFaultProxy(server.baseUrl);
    const url = proxy.url;
    await proxy.close();
    const c = new Client({ baseUrl: url, retries: 1, maxRetryWaitMs: 1 });
    await assert.rejects(c.getSession("x"), (e) => e instanceof ConnectionError);
  });

  test("the API key is sent as a Bearer token", async () => {
    const c = new Client({ baseUrl: server.baseUrl, apiKey: "am_notakey" });
    // No key exists, so the loopback server lets requests without a key
    // through; a key that is sent must be valid.
    await assert.rejects(c.getSession("taken"), (e) => e instanceof AgentmemError && e.code === "unauthorized" && e.status === 401);
  });

  test("the constructor refuses a bad base URL", () => {
    assert.throws(() => new Client({ baseUrl: "localhost:8080" }), TypeError);
    assert.throws(() => new Client({ baseUrl: "ftp://x" }), TypeError);
  });
});

test("the main entry point imports nothing but its own modules", async () => {
  const { readFileSync, readdirSync } = await import("node:fs");
  const dist = new URL("../dist/", import.meta.url);
  // The import and export ... from statements of a module (at the start of
  // a line: the examples in comments are not imports).
  const imports = (f) => [...readFileSync(new URL(f, dist), "utf8").matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)";$/gm)].map((m) => m[1]);
  const adapters = new Set(["openai-agents.js", "langchain.js"]);
  for (const f of readdirSync(dist).filter((f) => f.endsWith(".js") && !adapters.has(f))) {
    for (const spec of imports(f)) assert.ok(spec.startsWith("./"), `${f} imports ${spec}`);
  }
  assert.ok(imports("index.js").includes("./client.js"));
  // The LangChain adapter imports @langchain/core; the Agents SDK adapter
  // needs only its types, so it imports nothing of the SDK at run time.
  assert.ok(imports("langchain.js").includes("@langchain/core/chat_history"));
  assert.deepEqual(imports("openai-agents.js").filter((s) => !s.startsWith("./")), []);
});
