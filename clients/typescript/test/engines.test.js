// The package's engines claim is the Node it and its tests run on: no
// installed dependency (runtime, peer or development) asks for a newer
// Node than package.json's "engines" says, so `npm ci` on the oldest Node
// the package claims gives no EBADENGINE and the tests run there.
import assert from "node:assert/strict";
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

// minimum returns the lowest major version a simple ">=N[.x.y]" (or
// "^N", "N.x") range allows, or undefined for a range it cannot read.
function minimum(range) {
  const m = /^\s*(?:>=|\^|~)?\s*v?(\d+)(?:\.[\dx*]+)*\s*$/.exec(range);
  return m ? Number(m[1]) : undefined;
}

// packages lists node_modules' packages, scoped ones included.
function packages(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith(".")) continue;
    if (name.startsWith("@")) {
      for (const sub of readdirSync(join(dir, name))) out.push(join(dir, name, sub));
    } else {
      out.push(join(dir, name));
    }
  }
  return out;
}

test("no dependency needs a newer Node than the package claims", () => {
  const claimed = minimum(pkg.engines.node);
  assert.ok(claimed, `package.json's engines.node ${pkg.engines.node} is not a >=N range`);
  assert.ok(Number(process.versions.node.split(".")[0]) >= claimed, `the tests run on Node ${process.versions.node}, older than the claimed ${pkg.engines.node}`);
  const modules = join(root, "node_modules");
  assert.ok(existsSync(modules), "node_modules is missing: run npm ci");
  const newer = [];
  for (const dir of packages(modules)) {
    const file = join(dir, "package.json");
    if (!existsSync(file)) continue;
    const dep = JSON.parse(readFileSync(file, "utf8"));
    const range = dep.engines?.node;
    if (typeof range !== "string" || range.includes("||")) continue;
    const need = minimum(range.split(" ")[0]);
    if (need !== undefined && need > claimed) newer.push(`${dep.name}@${dep.version} needs Node ${range}`);
  }
  assert.deepEqual(newer, [], `dependencies need a newer Node than engines.node ${pkg.engines.node}`);
});
