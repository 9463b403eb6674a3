package tokenizer

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// Special tokens, as in OpenAI's tiktoken (tiktoken_ext/openai_public.py).
// They are never produced by Encode (markers are ordinary text) but Decode
// knows them.
var (
	o200kSpecial = map[string]int{
		"<|endoftext|>":   199999,
		"<|endofprompt|>": 200018,
	}
	cl100kSpecial = map[string]int{
		"<|endoftext|>":   100257,
		"<|fim_prefix|>":  100258,
		"<|fim_middle|>":  100259,
		"<|fim_suffix|>":  100260,
		"<|endofprompt|>": 100276,
	}
)

// rankSource opens the rank file of an encoding (one "base64(token) rank"
// a line). It returns the file, its size in bytes and how many ranks it
// must hold.
type rankSource func() (file io.Reader, size, want int, err error)

// The rank files are embedded in github.com/pkoukk/tiktoken-go-loader
// (package assets, an embed.FS). They are read from the binary, never from
// the network or the file system.
func o200kRanks() (io.Reader, int, int, error) { return openAsset("o200k_base.tiktoken", 199998) }

func cl100kRanks() (io.Reader, int, int, error) { return openAsset("cl100k_base.tiktoken", 100256) }

func openAsset(name string, want int) (io.Reader, int, int, error) {
	f, err := assets.Assets.Open(name)
	if err != nil {
		return nil, 0, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	return f, int(st.Size()), want, nil
}

// splitter returns the end of the pre-tokenizer's match that starts at byte
// i < len(s) of s, which is valid UTF-8.
type splitter func(s string, i int) int

// bpe is an exact tiktoken BPE encoding whose ranks are loaded on first use.
type bpe struct {
	name    string
	split   splitter
	special map[string]int
	source  rankSource

	once sync.Once
	v    *vocab
	err  error
}

func newBPE(name string, split splitter, special map[string]int, source rankSource) *bpe {
	return &bpe{name: name, split: split, special: special, source: source}
}

// Name implements Counter.
func (e *bpe) Name() string { return e.name }

// Count implements Counter.
func (e *bpe) Count(text string) int {
	v := e.vocab()
	sc := getScratch()
	n := v.count(e.split, sc, validText(text))
	putScratch(sc)
	return n
}

// Encode implements Encoder.
func (e *bpe) Encode(text string) []int {
	v := e.vocab()
	sc := getScratch()
	ids := v.encode(e.split, sc, make([]int, 0, len(text)/4+8), validText(text))
	putScratch(sc)
	return ids
}

// Decode implements Encoder.
func (e *bpe) Decode(tokens []int) string {
	v := e.vocab()
	var b strings.Builder
	for _, t := range tokens {
		switch {
		case t >= 0 && t < v.nRanks:
			b.Write(v.token(t))
		default:
			b.WriteString(v.special[t]) // "" for no token
		}
	}
	return b.String()
}

// validText returns text with each byte of invalid UTF-8 replaced by U+FFFD,
// as tiktoken-go does (it matches the text as runes).
func validText(text string) string {
	if utf8.ValidString(text) {
		return text
	}
	return string([]rune(text))
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(sc *scratch) {
	if !sc.big() {
		scratchPool.Put(sc)
	}
}

// vocab returns the loaded encoding, loading it on first use. The ranks
// are compiled into the binary and pinned by go.sum, and tests load both
// encodings. So a failure here is a broken build, and it panics.
func (e *bpe) vocab() *vocab {
	e.once.Do(func() { e.v, e.err = e.load() })
	if e.err != nil {
		panic(e.err)
	}
	return e.v
}

func (e *bpe) load() (*vocab, error) {
	loadClasses()
	file, size, want, err := e.source()
	if err != nil {
		return nil, fmt.Errorf("tokenizer: loading %s ranks: %w", e.name, err)
	}
	v, err := parseVocab(file, size, want, e.special)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s ranks: %w", e.name, err)
	}
	return v, nil
}

// count returns the number of tokens of s, which is valid UTF-8: tiktoken's
// encode_ordinary split with split, each piece byte-pair encoded.
func (v *vocab) count(split splitter, sc *scratch, s string) int {
	if sc.hotVocab != v {
		sc.hot = [hotSlots]hotSlot{}
		sc.hotVocab = v
	}
	n := 0
	for i := 0; i < len(s); {
		j := split(s, i)
		piece := s[i:j]
		i = j
		switch {
		case len(piece) <= 1:
			n++
		case len(piece) <= 8:
			n += v.countShort(sc, piece)
		case v.lookup(piece) != noRank:
			n++
		default:
			n += len(merge(v, sc, piece))
		}
	}
	return n
}

// countShort returns the number of tokens of piece, which has 2 to 8
// bytes, through sc's piece cache.
func (v *vocab) countShort(sc *scratch, piece string) int {
	key := pack(piece)
	h := hash(piece, key)
	sl := &sc.hot[h>>(64-hotBits)]
	if sl.key == key && uint8(sl.meta) == uint8(len(piece)) {
		return int(sl.meta >> 8)
	}
	var r uint32
	if len(piece) == 2 {
		r = v.pairRank[int(piece[0])|int(piece[1])<<8] - 1
	} else {
		r = v.lookupHashed(piece, key, h)
	}
	k := 1
	if r == noRank {
		k = len(merge(v, sc, piece))
	}
	*sl = hotSlot{key, uint32(len(piece)) | uint32(k)<<8}
	return k
}

// encode appends the tokens of s, which is valid UTF-8, to dst.
func (v *vocab) encode(split splitter, sc *scratch, dst []int, s string) []int {
	for i := 0; i < len(s); {
		j := split(s, i)
		piece := s[i:j]
		i = j
		if r := v.lookup(piece); r != noRank {
			dst = append(dst, int(r))
			continue
		}
		for _, t := range merge(v, sc, piece) {
			dst = append(dst, int(t))
		}
	}
	return dst
}
