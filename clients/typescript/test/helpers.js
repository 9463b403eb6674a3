// Test helpers: the real agentmem binary on a free loopback port with a
// temporary SQLite file, and a proxy in front of it that answers chosen
// requests with 503 (to test the client's retries against the real
// server).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
/** The repository's root. */
export const repoRoot = resolve(here, "../../..");

let built;

/**
 * agentmemBinary returns the path of the agentmem binary: $AGENTMEM_BIN
 * (scripts/test.sh sets it), or one built from this repository with
 * `go build ./cmd/agentmem` into a temporary directory.
 */
export function agentmemBinary() {
  if (process.env.AGENTMEM_BIN) return process.env.AGENTMEM_BIN;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), "agentmem-ts-bin-"));
    built = join(dir, "agentmem");
    execFileSync("go", ["build", "-o", built, "./cmd/agentmem"], { cwd: repoRoot, stdio: "inherit" });
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  }
  return built;
}

/**
 * startServer starts `agentmem serve` on 127.0.0.1:0 with a SQLite file
 * in a new temporary directory (and the flags args) and resolves when it
 * listens, with its base URL and a stop function (which also removes the
 * directory).
 */
export async function startServer(...args) {
  const dir = mkdtempSync(join(tmpdir(), "agentmem-ts-"));
  const child = spawn(agentmemBinary(), ["serve", "--addr", "127.0.0.1:0", "--store", `sqlite://${join(dir, "agentmem.db")}`, ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, AGENTMEM_LLM_BASE_URL: "" },
  });
  let log = "";
  const baseUrl = await new Promise((resolve, reject) => {
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const m = /msg="agentmem serving" addr=(\S+)/.exec(log);
      if (m) resolve(`http://${m[1]}`);
    });
    child.on("exit", (code) => reject(new Error(`agentmem serve exited with ${code}:\n${log}`)));
    child.on("error", reject);
  });
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { baseUrl, stop, log: () => log };
}

/**
 * startFaultProxy starts an HTTP proxy to target on a free loopback port.
 * While `failures` (set by the test) is above 0, a request is answered
 * 503 unavailable with `Retry-After: retryAfter` (and failures
 * decremented) instead of being forwarded. `requests` counts what it got,
 * `injected` the 503s it has sent.
 */
export async function startFaultProxy(target) {
  const state = { failures: 0, retryAfter: "1", requests: 0, injected: 0, url: "", close: async () => {} };
  const server = createServer(async (req, res) => {
    state.requests++;
    const chunks = [];
    for await (const c of req) chunks.push(c);
    if (state.failures > 0) {
      state.failures--;
      res.writeHead(503, { "Content-Type": "application/json", "Retry-After": state.retryAfter });
      res.end(JSON.stringify({ error: { code: "unavailable", message: "injected by the test proxy" } }), () => state.injected++);
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers["content-length"];
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const r = await fetch(target + req.url, { method: req.method, headers, body });
    const out = Buffer.from(await r.arrayBuffer());
    const h = {};
    r.headers.forEach((v, k) => {
      if (k !== "content-length" && k !== "content-encoding" && k !== "transfer-encoding") h[k] = v;
    });
    res.writeHead(r.status, h);
    res.end(out);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  state.url = `http://127.0.0.1:${server.address().port}`;
  state.close = () => new Promise((r) => server.close(r));
  return state;
}

let standinBuilt;

/**
 * startStandin starts the stand-in provider of the proxy's tests
 * (proxy/proxytest/cmd/standin, built from this repository): an OpenAI-
 * and Anthropic-compatible server on a free loopback port that answers as
 * a scripted tool-using model and checks what it received (POST
 * /_proxytest/check). It resolves with its URL and a stop function.
 */
export async function startStandin() {
  if (!standinBuilt) {
    const dir = mkdtempSync(join(tmpdir(), "agentmem-standin-"));
    standinBuilt = join(dir, "standin");
    execFileSync("go", ["build", "-o", standinBuilt, "./proxy/proxytest/cmd/standin"], { cwd: repoRoot, stdio: "inherit" });
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  }
  const child = spawn(standinBuilt, [], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const line = out.split("\n")[0];
      if (out.includes("\n")) resolve(line.trim());
    });
    child.on("exit", (code) => reject(new Error(`standin exited with ${code}`)));
    child.on("error", reject);
  });
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  };
  return { url, stop };
}

/**
 * startExtractionModel starts a stand-in for an OpenAI-compatible chat
 * model as the server's fact extractor calls it, on a free loopback port:
 * it reads the turn and the known facts the extractor sends (the user
 * message's JSON) and answers decisions computed from them. "I live in X"
 * in a user message adds "Lives in X.", or supersedes the known fact of
 * another city; anything else is ignored. While `model.down` is set it
 * answers 503 with Retry-After: 0 (the server's retries do not wait).
 * Resolves with the model, its `baseUrl` for --llm-base-url, and `stop`.
 */
export async function startExtractionModel() {
  const model = { down: false };
  const srv = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const send = (status, value, headers = {}) => {
      res.writeHead(status, { "Content-Type": "application/json", ...headers });
      res.end(JSON.stringify(value));
    };
    if (model.down) return send(503, { error: { message: "overloaded" } }, { "Retry-After": "0" });
    let given;
    try {
      given = JSON.parse(JSON.parse(body).messages[1].content);
    } catch {
      return send(400, { error: { message: "not an extraction" } });
    }
    const decisions = [];
    for (const msg of given.turn ?? []) {
      const m = /I live in (\w+)/.exec(msg.content ?? "");
      if (msg.role !== "user" || !m) continue;
      const text = `Lives in ${m[1]}.`;
      const old = (given.known_facts ?? []).find((f) => f.text.startsWith("Lives in ") && f.text !== text);
      decisions.push(old ? { action: "supersede", id: old.id, text, confidence: 0.9 } : { action: "add", text });
    }
    if (decisions.length === 0) decisions.push({ action: "ignore" });
    send(200, {
      id: "chatcmpl-1", object: "chat.completion", model: "stand-in",
      choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: JSON.stringify({ decisions }) } }],
    });
  });
  await new Promise((resolve) => srv.listen(0, "127.0.0.1", resolve));
  model.baseUrl = `http://127.0.0.1:${srv.address().port}/v1`;
  model.stop = () => new Promise((resolve) => srv.close(resolve));
  return model;
}
