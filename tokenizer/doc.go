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
// they compare with github.com/pkoukk/tiktoken-go on the corpus, on a
// stress corpus and in the fuzz targets FuzzO200k and FuzzCL100k (see
// Design).
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
// github.com/pkoukk/tiktoken-go-loader (its package assets, an embed.FS).
// Nothing is downloaded or read from disk, ever. On an encoding's first use
// its file is parsed into a vocabulary of its own (vocab.go): the bytes of
// every token in one arena, an open-addressing hash table from bytes to
// rank keyed by the first 8 bytes, a 64k-entry table for two-byte tokens
// and a 256-entry one for single bytes. The file is parsed in 32 kB chunks
// rather than copied whole, and on Linux the hash table is advised into
// transparent huge pages (hugepage_linux.go): faulting fresh memory in
// 4 kB pages was most of the cost of a first use.
//
// # Design
//
// Encoding is tiktoken's encode_ordinary in two steps, both hand-written
// here because the measured need asked for it: the regexp2 pre-tokenizer
// used before (and by tiktoken-go) ran at 3 to 4 MB/s on one core with
// about 100 bytes of garbage per input byte, and counting was nearly all of
// the CPU time of a memory: 7.7 s of the 8.9 to 11.7 s of the 10,000-step
// replay. The hand-written code counts about 25 times as fast, and the
// replay takes 1.1 to 1.2 s, of which counting 0.3 s (docs/benchmarks.md).
//
//   - Pre-tokenizer (split.go): one function per encoding, nextO200k and
//     nextCL100k, matches the encoding's split pattern at a position and
//     returns the match's end, with the semantics of the backtracking
//     regular expression engines tiktoken and tiktoken-go use: alternatives
//     tried left to right, greedy quantifiers giving back one rune at a time
//     (so "\s+(?!\S)" leaves the last space of a run to the next word, and
//     "\s*[\r\n]+" ends after the run's last newline). Runes are classified
//     by a table: 128 entries for ASCII, a 128 kB one for the BMP and SMP
//     built from Go's unicode tables (the ones regexp2 uses) on first use,
//     and the unicode package above that.
//   - Merge (merge.go): tiktoken's byte-pair merge, the lowest-ranked
//     adjacent pair first and the leftmost on ties, in fixed arrays for
//     pieces up to 64 bytes and with a heap in O(n log n) above (a run of
//     100 kB of "=" is one piece, which tiktoken-go merges in quadratic
//     time: hours for a megabyte). A piece that is itself a token, 93 to
//     95% of the pieces of the benchmark text, takes one hash lookup and no
//     merge; the rest merge in pooled scratch memory, so Count allocates
//     nothing and Encode only its result. There is no cache of merged
//     pieces: merging is about a quarter of the time in a profile of the
//     test corpus, and a cache would pay off only on repetitive text.
//   - Parallel counting (CountParallel): the text is cut at positions where
//     both patterns always start a piece (an ASCII space after an ASCII
//     letter or digit, or an ASCII letter or digit after a newline), and the
//     chunks are counted on several goroutines; the sum is Count's.
//
// The tests prove the hand-written code against references rather than
// trusting it: the pieces against regexp2 with tiktoken's patterns; the
// token IDs against golden output of tiktoken itself on the 1 MiB test
// corpus, and against tiktoken-go on that corpus, on the first 2 MiB of the
// benchmarks' 10 MiB text (all of it with TOKENIZER_MIXED_FULL=1) and on
// a stress corpus of 40,000 documents built from atoms on the patterns'
// edges (every Unicode category the patterns name, case-insensitive
// contractions, digit runs, whitespace runs around newlines such as
// "\n \n" and "  \n    \n", emoji, runes above the class table, invalid
// UTF-8); and the fuzz targets FuzzO200k and FuzzCL100k compare everything
// with the references on arbitrary input.
//
// # Cost model
//
// The figures are in docs/benchmarks.md, with the commands that measure
// them (go test -bench 'Mixed|Load' ./tokenizer/):
//
//   - First use: an encoding parses its embedded ranks on its first Count,
//     Encode or Decode (not in Get), once, race-free (sync.Once), and
//     keeps them on the heap (megabytes; tens of milliseconds). Call
//     Count("") at start-up to pay it early.
//   - Count: linear in the input, without allocating, tens of times
//     faster than tiktoken-go, the reference. CountParallel splits the
//     input across cores. Encode allocates only the IDs it returns.
//     Concurrent calls share only read-only tables.
//   - Heuristic: no allocation, no load.
package tokenizer
