// The OpenAPI document is complete enough to generate a client from:
// TypeScript types generated from the document the binary serves compile
// under strict tsc, every operation has its success and error responses
// typed, and they are the types this package was built against.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import openapiTS, { astToString } from "openapi-typescript";
import { repoRoot, startServer } from "./helpers.js";

const require = createRequire(import.meta.url);

let server;
let dir;
before(async () => {
  server = await startServer();
  dir = mkdtempSync(join(tmpdir(), "agentmem-openapi-"));
});
after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Type-level checks of the generated types: each is an error when it
// does not hold.
const checks = `
import type { components, operations, paths } from "./openapi.js";

// Each check is a constant whose type is its own name when the check
// holds, and the offending operations (a type error naming them) when not.
// Every operation has a typed success response (JSON, or no content).
type SuccessCodes = 200 | 201 | 204;
type NoSuccess = {
  [K in keyof operations]: Extract<keyof operations[K]["responses"], SuccessCodes> extends never ? K : never;
}[keyof operations];
export const everyOperationSucceeds: [NoSuccess] extends [never] ? "EveryOperationSucceeds" : NoSuccess = "EveryOperationSucceeds";

// Every error response of every operation is the error body (but the
// readiness probe's 503, which is its status body).
type ErrorCodes = 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 500 | 501 | 502 | 503;
type ErrorBody = components["schemas"]["ErrorBody"];
type BadError = {
  [K in Exclude<keyof operations, "readyz">]: {
    [S in Extract<keyof operations[K]["responses"], ErrorCodes>]: operations[K]["responses"][S] extends {
      content: { "application/json": ErrorBody };
    }
      ? never
      : \`\${K & string} \${S & number}\`;
  }[Extract<keyof operations[K]["responses"], ErrorCodes>];
}[Exclude<keyof operations, "readyz">];
export const everyErrorIsTheErrorBody: [BadError] extends [never] ? "EveryErrorIsTheErrorBody" : BadError = "EveryErrorIsTheErrorBody";

// Every JSON request body is typed (not unknown).
type UntypedBody = {
  [K in keyof operations]: [NonNullable<operations[K]["requestBody"]>] extends [never]
    ? never // no body
    : NonNullable<operations[K]["requestBody"]> extends { content: { "application/json": infer B } }
      ? unknown extends B
        ? K
        : never
      : K;
}[keyof operations];
export const everyBodyIsTyped: [UntypedBody] extends [never] ? "EveryBodyIsTyped" : UntypedBody = "EveryBodyIsTyped";

// A client written against the types alone: the path, its parameters,
// body and answer all come from the document.
type Method = "get" | "post" | "delete";
type Op<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type Body<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : undefined;
type Answer<O> = O extends { responses: infer R }
  ? { [S in Extract<keyof R, SuccessCodes>]: R[S] extends { content: { "application/json": infer J } } ? J : void }[Extract<keyof R, SuccessCodes>]
  : never;
export declare function call<P extends keyof paths, M extends Method>(method: M, path: P, body: Body<Op<P, M>>): Promise<Answer<Op<P, M>>>;

export async function sample(): Promise<number> {
  const s = await call("post", "/v1/sessions", { id: "demo", user_id: "u1", retention: "session" });
  const appended = await call("post", "/v1/sessions/{id}/messages", [
    { role: "user", content: "hi" },
    { role: "assistant", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
  ]);
  const ctx = await call("get", "/v1/sessions/{id}/context", undefined);
  const code: components["schemas"]["Error"]["code"] = "nothing_to_pop";
  return s.last_seq + appended.last_seq + (ctx.tokens ?? 0) + code.length;
}
`;

test("types generated from /v1/openapi.json compile under strict tsc", async () => {
  const resp = await fetch(`${server.baseUrl}/v1/openapi.json`);
  assert.equal(resp.status, 200);
  const served = await resp.text();
  assert.equal(served, readFileSync(join(repoRoot, "server/openapi.json"), "utf8"), "the binary serves server/openapi.json");
  const doc = JSON.parse(served);
  assert.ok(doc.servers?.length > 0, "the document lists servers");
  assert.ok(doc.components.securitySchemes?.bearerAuth, "the document has its security scheme");

  const generated = astToString(await openapiTS(doc));
  writeFileSync(join(dir, "openapi.ts"), generated);
  writeFileSync(join(dir, "checks.ts"), checks);
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "ES2022",
        lib: ["ES2022"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        types: [],
      },
      files: ["openapi.ts", "checks.ts"],
    }),
  );
  const tsc = require.resolve("typescript/bin/tsc");
  try {
    execFileSync(process.execPath, [tsc, "-p", dir], { encoding: "utf8" });
  } catch (e) {
    assert.fail(`tsc failed on the generated types:\n${e.stdout}${e.stderr}`);
  }

  // The package's types are these very types.
  // (The command line puts a header comment above what it generates.)
  const built = readFileSync(new URL("../src/generated/openapi.ts", import.meta.url), "utf8").replace(/^\/\*\*[\s\S]*?\*\/\n\n/, "");
  assert.equal(built, generated, "src/generated/openapi.ts is not generated from the served document: run npm run build");
});

test("the type checks fail on a document that lacks what they check", async () => {
  const doc = JSON.parse(readFileSync(join(repoRoot, "server/openapi.json"), "utf8"));
  // An error response that is not the error body, and an untyped body.
  doc.paths["/v1/sessions"].post.responses["400"] = { description: "bad", content: { "application/json": { schema: { type: "string" } } } };
  doc.paths["/v1/sessions/{id}/compact"].post.requestBody.content["application/json"].schema = {};
  writeFileSync(join(dir, "openapi.ts"), astToString(await openapiTS(doc)));
  writeFileSync(join(dir, "checks.ts"), checks);
  const tsc = require.resolve("typescript/bin/tsc");
  let out = "";
  assert.throws(() => {
    try {
      execFileSync(process.execPath, [tsc, "-p", dir], { encoding: "utf8" });
    } catch (e) {
      out = e.stdout;
      throw e;
    }
  });
  assert.match(out, /EveryErrorIsTheErrorBody/);
  assert.match(out, /EveryBodyIsTyped/);
});
