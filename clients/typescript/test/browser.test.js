// The client in a browser: headless Chromium loads the built package as
// ES modules from a page on another origin and uses the real server
// (CORS), so the package needs nothing of Node. Chromium is
// $AGENTMEM_TEST_CHROMIUM (scripts/test.sh sets it) or /usr/bin/chromium;
// without one the test skips, with the reason, except in CI.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, normalize } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { startServer } from "./helpers.js";

const chromium = process.env.AGENTMEM_TEST_CHROMIUM || (existsSync("/usr/bin/chromium") ? "/usr/bin/chromium" : "");
const inCI = /^(true|1)$/i.test(process.env.CI ?? "");
const skip = !chromium && !inCI ? "no Chromium (set AGENTMEM_TEST_CHROMIUM, or apt-get install chromium)" : false;

const dist = fileURLToPath(new URL("../dist/", import.meta.url));

// The page: the client against the server, the results posted back.
const page = (baseUrl) => `<!doctype html><title>agentmem client</title>
<script type="module">
import { Client, NotFoundError, IdempotencyKeyReusedError } from "/dist/index.js";
const out = {};
try {
  const c = new Client({ baseUrl: ${JSON.stringify(baseUrl)} });
  out.created = (await c.createSession({ id: "browser-1", user_id: "web" })).id;
  out.seqs = (await c.appendMessages("browser-1", [{ role: "user", content: "from a browser" }, { role: "assistant", content: "hello, browser" }], { idempotencyKey: "b1" })).seqs;
  out.retry = (await c.appendMessages("browser-1", [{ role: "user", content: "from a browser" }, { role: "assistant", content: "hello, browser" }], { idempotencyKey: "b1" })).seqs;
  try { await c.appendMessages("browser-1", { role: "user", content: "other" }, { idempotencyKey: "b1" }); } catch (e) { out.reused = e instanceof IdempotencyKeyReusedError; }
  out.context = (await c.getContext("browser-1", { budget: 1000 })).messages;
  try { await c.getSession("nope"); } catch (e) { out.notFound = e instanceof NotFoundError && e.status === 404; }
} catch (e) {
  out.error = String(e);
}
await fetch("/result", { method: "POST", body: JSON.stringify(out) });
</script>`;

test("the client works in a browser, across origins", { skip }, async () => {
  assert.ok(chromium, "CI: Chromium is required (AGENTMEM_TEST_CHROMIUM or /usr/bin/chromium)");
  let resolveResult;
  const result = new Promise((r) => (resolveResult = r));
  let server;
  const web = createServer(async (req, res) => {
    if (req.method === "POST" && req.url === "/result") {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      res.end();
      resolveResult(JSON.parse(Buffer.concat(chunks).toString()));
    } else if (req.url === "/") {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end(page(server.baseUrl));
    } else if (req.url.startsWith("/dist/") && req.url.endsWith(".js")) {
      const file = normalize(join(dist, req.url.slice("/dist/".length)));
      if (!file.startsWith(dist) || !existsSync(file)) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "Content-Type": "text/javascript" });
      res.end(readFileSync(file));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => web.listen(0, "127.0.0.1", r));
  const origin = `http://127.0.0.1:${web.address().port}`;
  server = await startServer("--cors-origins", origin);
  const profile = mkdtempSync(join(tmpdir(), "agentmem-chromium-"));
  // In a process group of its own: Chromium's renderers and helpers
  // outlive the process spawned (a wrapper script) unless the group is
  // stopped, and go on writing into the profile.
  const browser = spawn(
    chromium,
    ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", `--user-data-dir=${profile}`, `${origin}/`],
    { stdio: ["ignore", "ignore", "pipe"], detached: true },
  );
  // The end of Chromium's stderr, to say why it failed.
  let stderr = "";
  browser.stderr.on("data", (chunk) => (stderr = (stderr + chunk).slice(-2000)));
  let timer;
  try {
    // Chromium that cannot start, exits, or never runs the page fails
    // the test rather than leaving it waiting.
    const failed = new Promise((_, reject) => {
      browser.once("error", (err) => reject(new Error(`chromium did not start: ${err.message}`)));
      browser.once("exit", (code, signal) => reject(new Error(`chromium exited (${code ?? signal}) before the page reported:\n${stderr}`)));
      timer = setTimeout(() => reject(new Error(`the page reported nothing within 60 s; chromium's stderr:\n${stderr}`)), 60_000);
    });
    const out = await Promise.race([result, failed]);
    assert.equal(out.error, undefined);
    assert.equal(out.created, "browser-1");
    assert.deepEqual(out.seqs, [1, 2]);
    assert.deepEqual(out.retry, [1, 2]);
    assert.equal(out.reused, true);
    assert.deepEqual(out.context, [
      { role: "user", content: "from a browser" },
      { role: "assistant", content: "hello, browser" },
    ]);
    assert.equal(out.notFound, true);
  } finally {
    // Every step runs whatever the one before did: a server left running
    // keeps this file's process, and so the whole test run, waiting.
    clearTimeout(timer);
    try {
      if (browser.pid !== undefined) {
        const gone = browser.exitCode === null && browser.signalCode === null ? new Promise((r) => browser.once("exit", r)) : null;
        try {
          process.kill(-browser.pid, "SIGKILL"); // the group: the browser and every helper it started
        } catch (err) {
          if (err.code !== "ESRCH") throw err; // ESRCH: all gone already
        }
        await gone;
      }
    } finally {
      try {
        // A helper may still be ending: its last writes make a directory
        // not empty for a moment.
        rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
      } finally {
        web.closeAllConnections();
        await new Promise((r) => web.close(r));
        await server.stop();
      }
    }
  }
});
