// Package tokenizer counts tokens, exactly and offline, for the memory
// engine's token budgets.
//
// # Counters
//
// Get returns a Counter by name:
//
//   - O200kBase ("o200k_base"): the BPE encoding of GPT-4o, GPT-4.1, o1, o3
//     and later OpenAI models.
//   - CL100kBase ("cl100k_base"): the BPE encoding of GPT-4, GPT-3.5-turbo
//     and text-embedding-3.
//   - Heuristic ("heuristic"): ceil(runes/4), for models whose tokenizer is
//     not available. It is an estimate: English prose is about 4 characters
//     a token, but code, JSON, digits and non-Latin scripts take more tokens
//     per character.
//
// The two BPE counters are also Encoders (GetEncoder), which give and read
// token IDs. All counters are safe for concurrent use; Get returns the same
// value for a name every time.
//
// # Exactness
//
// BPE counts and IDs are those of OpenAI's tiktoken encode_ordinary.
// The tests check every ID against golden output of tiktoken's own Rust
// core (the npm package "tiktoken") for a 1 MiB corpus of prose in ten
// scripts, JSON, Go source, stack traces and logs, and for edge cases; they
// pin the embedded rank files to the SHA-256 sums tiktoken verifies; and
// they compare with github.com/pkoukk/tiktoken-go on the corpus and in the
// fuzz target FuzzCount.
//
// Text is encoded as ordinary text: special-token markers such as
// "<|endoftext|>" count as the characters they are, never as the special
// token and never as an error. Invalid UTF-8 never panics; each invalid byte
// is encoded as U+FFFD, as tiktoken-go does (tiktoken itself takes only
// valid text). For every input Count(s) == len(Encode(s)), and for valid
// UTF-8 Decode(Encode(s)) == s. Decode skips IDs that are no token.
//
// Counts are not additive: Count(a+b) can differ from Count(a)+Count(b) by
// a token or so where a and b meet. They count text only, not the few
// tokens a chat API adds around each message.
//
// # Where the ranks come from
//
// The rank files (cl100k_base.tiktoken, o200k_base.tiktoken, the official
// ones, by their SHA-256) are embedded in the binary by
// github.com/pkoukk/tiktoken-go-loader, whose OfflineLoader implements
// tiktoken-go's BpeLoader interface and is read through here. Nothing is
// downloaded or read from disk, ever. That module has both encodings, so no
// other source of o200k_base was needed.
//
// The encoder itself is this package's, not tiktoken-go's Tiktoken: it
// splits text with the same regexp2 patterns and makes the same merges in
// the same order, but tiktoken-go (like tiktoken) finds each merge by
// scanning the whole piece, which is quadratic in the piece's length, and a
// piece can be long: a run of 16 kB of "=" or of binary bytes, which the
// patterns cannot split, took tiktoken-go 0.2 s to 2.7 s, so 1 MB would
// take from half an hour to hours. Pieces over 128 bytes are merged here with a heap in
// O(n log n) instead (1 MB in about a second). tiktoken-go remains the
// reference in the tests.
//
// # Cost model
//
// Measured on one core of a 2-core amd64 VM (go test -bench . ./tokenizer/):
//
//   - First use: an encoding parses its embedded ranks on its first Count,
//     Encode or Decode (not in Get), once, race-free (sync.Once): about
//     60 ms and 13 MB of heap kept for o200k_base, 25 ms and 6.5 MB for
//     cl100k_base. Call Count("") at start-up to pay it early.
//   - Count and Encode: linear in the input, about 3 to 4 MB/s per core
//     (roughly 1 µs a token), nearly all in the regexp2 pre-tokeniser, with
//     about 100 bytes of short-lived garbage per input byte. Counting a
//     4 kB message costs about 1 ms; cache counts of stored text rather
//     than recount it. Concurrent calls share read-only tables and
//     regexp2's runner cache, which takes a short lock per match.
//   - Heuristic: over 1 GB/s, no allocation, no load.
package tokenizer
