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
// token IDs. All counters are safe for concurrent use; Get returns the
// same value for a name every time.
//
// # Exactness
//
// BPE counts and IDs are those of OpenAI's tiktoken encode_ordinary. The
// tests check every ID against golden output of tiktoken's own Rust core
// (the npm package "tiktoken"). The golden corpus is 1 MiB of prose in ten
// scripts, JSON, Go source, stack traces and logs, plus edge cases. The
// tests also pin the embedded rank files to the SHA-256 sums tiktoken
// verifies. They compare with github.com/pkoukk/tiktoken-go on the corpus,
// on a stress corpus and in the fuzz targets FuzzO200k and FuzzCL100k (see
// Design).
//
// Text is encoded as ordinary text. Special-token markers such as
// "<|endoftext|>" count as the characters they are, never as the special
// token and never as an error. Invalid UTF-8 never panics; each invalid
// byte is encoded as U+FFFD, as tiktoken-go does (tiktoken itself takes
// only valid text). For every input Count(s) == len(Encode(s)), and for
// valid UTF-8 Decode(Encode(s)) == s. Decode skips IDs that are no token.
//
// Counts are not additive: Count(a+b) can differ from Count(a)+Count(b) by
// a token or so where a and b meet. They count text only, not the few
// tokens a chat API adds around each message.
//
// # Where the ranks come from
//
// The rank files are the official cl100k_base.tiktoken and
// o200k_base.tiktoken, known by their SHA-256.
// github.com/pkoukk/tiktoken-go-loader (its package assets, an embed.FS)
// embeds them in the binary. Nothing is downloaded or read from disk,
// ever.
//
// On an encoding's first use its file is parsed into a vocabulary of its
// own (vocab.go). The bytes of every token are in one arena. An
// open-addressing hash table keyed by the first 8 bytes maps bytes to
// rank. A 64k-entry table holds the two-byte tokens and a 256-entry one
// the single bytes. The file is parsed in 32 kB chunks rather than copied
// whole. On Linux the hash table is advised into transparent huge pages
// (hugepage_linux.go), since faulting fresh memory in 4 kB pages is most
// of the cost of a first use.
//
// # Design
//
// Encoding is tiktoken's encode_ordinary in two steps, both hand-written
// here for speed. Counting is most of the CPU time of a memory. A regexp2
// pre-tokenizer, as tiktoken-go uses, is slow and allocates for every
// input byte. The figures are in docs/benchmarks.md.
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
//     time). A piece that is itself a token, as most pieces are, takes one
//     hash lookup and no merge; the rest merge in pooled scratch memory, so
//     Count allocates nothing and Encode only its result. Count keeps the
//     token counts of recent pieces of up to 8 bytes in a small table in
//     that scratch memory (hotSlots in merge.go): counting a step of a few
//     kB finds the vocabulary's table out of the CPU caches, and a hit in
//     the small table saves the misses to memory of the piece's lookups
//     and its merge.
//   - Parallel counting (CountParallel): the text is cut at positions where
//     both patterns always start a piece (an ASCII space after an ASCII
//     letter or digit, or an ASCII letter or digit after a newline), and the
//     chunks are counted on several goroutines; the sum is Count's.
//
// The tests prove the hand-written code against references rather than
// trusting it. The pieces are checked against regexp2 with tiktoken's
// patterns. The token IDs are checked against golden output of tiktoken
// itself on the 1 MiB test corpus. They are checked against tiktoken-go on
// that corpus, on the first 2 MiB of the benchmarks' 10 MiB text (all of
// it with TOKENIZER_MIXED_FULL=1) and on a stress corpus of 40,000
// documents. The stress corpus is built from atoms on the patterns' edges:
// every Unicode category the patterns name, case-insensitive contractions,
// digit runs, emoji, runes above the class table and invalid UTF-8. Its
// whitespace runs around newlines include "\n \n" and "  \n    \n". The
// fuzz targets FuzzO200k and FuzzCL100k compare everything with the
// references on arbitrary input.
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
