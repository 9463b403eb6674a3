package tokenizer

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Pre-tokenisation patterns and special tokens, as in OpenAI's tiktoken
// (tiktoken_ext/openai_public.py) and github.com/pkoukk/tiktoken-go.
var (
	o200kPattern = strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|")
	o200kSpecial = map[string]int{
		"<|endoftext|>":   199999,
		"<|endofprompt|>": 200018,
	}

	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	cl100kSpecial = map[string]int{
		"<|endoftext|>":   100257,
		"<|fim_prefix|>":  100258,
		"<|fim_middle|>":  100259,
		"<|fim_suffix|>":  100260,
		"<|endofprompt|>": 100276,
	}
)

// rankSource returns the mergeable ranks of an encoding (token bytes -> rank)
// and how many there must be.
type rankSource func() (ranks map[string]int, want int, err error)

// The rank files are embedded in github.com/pkoukk/tiktoken-go-loader; its
// OfflineLoader implements tiktoken-go's BpeLoader and never touches the
// network or the file system.
func o200kRanks() (map[string]int, int, error) {
	r, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("o200k_base.tiktoken")
	return r, 199998, err
}

func cl100kRanks() (map[string]int, int, error) {
	r, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	return r, 100256, err
}

// bpe is an exact tiktoken BPE encoding whose ranks are loaded on first use.
type bpe struct {
	name    string
	pattern string
	special map[string]int
	source  rankSource

	once sync.Once
	st   *bpeState
	err  error
}

// bpeState is the loaded, read-only part of a bpe.
type bpeState struct {
	re      *regexp2.Regexp // pre-tokeniser; safe for concurrent use
	ranks   map[string]int  // token bytes -> rank (= token ID)
	decoder []string        // token ID -> bytes, special tokens included; "" = no token
}

func newBPE(name, pattern string, special map[string]int, source rankSource) *bpe {
	return &bpe{name: name, pattern: pattern, special: special, source: source}
}

// Name implements Counter.
func (e *bpe) Name() string { return e.name }

// Count implements Counter.
func (e *bpe) Count(text string) int {
	bp := tokenBufs.Get().(*[]int)
	toks := e.appendTokens((*bp)[:0], text)
	n := len(toks)
	if cap(toks) <= maxPooledTokens {
		*bp = toks[:0]
		tokenBufs.Put(bp)
	}
	return n
}

// Encode implements Encoder.
func (e *bpe) Encode(text string) []int {
	return e.appendTokens(make([]int, 0, len(text)/4+8), text)
}

// Decode implements Encoder.
func (e *bpe) Decode(tokens []int) string {
	dec := e.state().decoder
	var b strings.Builder
	for _, t := range tokens {
		if t >= 0 && t < len(dec) {
			b.WriteString(dec[t])
		}
	}
	return b.String()
}

// Scratch token buffers for Count; ones grown past maxPooledTokens are dropped.
var tokenBufs = sync.Pool{New: func() any { s := make([]int, 0, 1024); return &s }}

const maxPooledTokens = 1 << 16

// state returns the loaded encoding, loading it on first use. The ranks are
// compiled into the binary and pinned by go.sum, and tests load both
// encodings, so a failure here is a broken build: it panics.
func (e *bpe) state() *bpeState {
	e.once.Do(func() { e.st, e.err = e.load() })
	if e.err != nil {
		panic(e.err)
	}
	return e.st
}

func (e *bpe) load() (*bpeState, error) {
	ranks, want, err := e.source()
	if err != nil {
		return nil, fmt.Errorf("tokenizer: loading %s ranks: %w", e.name, err)
	}
	if len(ranks) != want {
		return nil, fmt.Errorf("tokenizer: %s has %d ranks, want %d", e.name, len(ranks), want)
	}
	size := len(ranks)
	for _, id := range e.special {
		size = max(size, id+1)
	}
	dec := make([]string, size)
	for tok, r := range ranks {
		if r < 0 || r >= len(ranks) || dec[r] != "" || tok == "" {
			return nil, fmt.Errorf("tokenizer: %s: rank %d of %q is out of range or repeated", e.name, r, tok)
		}
		dec[r] = tok
	}
	// Every single byte must be a token, or a piece could fail to encode.
	for b := 0; b < 256; b++ {
		if _, ok := ranks[string([]byte{byte(b)})]; !ok {
			return nil, fmt.Errorf("tokenizer: %s has no token for byte %#x", e.name, b)
		}
	}
	for tok, id := range e.special {
		if id < len(ranks) || dec[id] != "" {
			return nil, fmt.Errorf("tokenizer: %s: special token %q has ID %d, which is taken", e.name, tok, id)
		}
		dec[id] = tok
	}
	re, err := regexp2.Compile(e.pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s pattern: %w", e.name, err)
	}
	return &bpeState{re: re, ranks: ranks, decoder: dec}, nil
}

// appendTokens appends the tokens of text to dst, as tiktoken's
// encode_ordinary does: split text with the encoding's pattern, then
// byte-pair encode each piece. Special-token markers are ordinary text.
//
// Like tiktoken-go, text is matched as runes, so each byte of invalid UTF-8
// is encoded as U+FFFD (Python's tiktoken only ever sees valid text).
func (e *bpe) appendTokens(dst []int, text string) []int {
	st := e.state()
	if text == "" {
		return dst
	}
	runes := []rune(text)
	if !utf8.ValidString(text) {
		text = string(runes)
	}
	// Match indices are in runes; walk a byte cursor alongside them so that
	// pieces are substrings of text, not copies.
	runePos, bytePos := 0, 0
	advance := func(to int) {
		for ; runePos < to; runePos++ {
			bytePos += utf8.RuneLen(runes[runePos])
		}
	}
	// regexp2 only errs on a match timeout, and none is set.
	m, _ := st.re.FindRunesMatch(runes)
	for m != nil {
		advance(m.Index)
		start := bytePos
		advance(m.Index + m.Length)
		dst = st.encodePiece(dst, text[start:bytePos])
		m, _ = st.re.FindNextMatch(m)
	}
	return dst
}

// encodePiece appends the tokens of one pre-tokenised piece.
func (st *bpeState) encodePiece(dst []int, piece string) []int {
	if piece == "" {
		return dst
	}
	if id, ok := st.ranks[piece]; ok {
		return append(dst, id)
	}
	if len(piece) <= linearMergeMax {
		return mergeLinear(dst, piece, st.ranks)
	}
	return mergeHeap(dst, piece, st.ranks)
}
