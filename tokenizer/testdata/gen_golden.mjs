// Writes golden_tiktoken.json from the output of TestWriteGoldenInput using
// OpenAI's tiktoken (the npm package "tiktoken", a WASM build of its Rust
// core, which embeds the rank files). See golden_test.go.
//
//	node gen_golden.mjs golden_input.json > golden_tiktoken.json
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { get_encoding } from "tiktoken";

const main = createRequire(import.meta.url).resolve("tiktoken");
const version = JSON.parse(readFileSync(join(dirname(main), "package.json"), "utf8")).version;
const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const idsHash = (ids) =>
  createHash("sha256").update(Array.from(ids).join(",")).digest("hex").slice(0, 16);

const out = {
  generator: `npm tiktoken ${version}, encode_ordinary`,
  corpus_sha256: input.corpus_sha256,
  encodings: {},
};
for (const name of ["o200k_base", "cl100k_base"]) {
  const enc = get_encoding(name);
  const docs = input.docs.map((d) => enc.encode_ordinary(d));
  out.encodings[name] = {
    doc_counts: docs.map((ids) => ids.length),
    doc_hashes: docs.map(idsHash),
    cases: input.cases.map((text) => ({ text, ids: Array.from(enc.encode_ordinary(text)) })),
  };
  enc.free();
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
