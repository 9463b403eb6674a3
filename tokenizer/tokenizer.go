package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Counter counts tokens in text. Implementations are safe for concurrent use.
type Counter interface {
	// Name returns the encoding name, e.g. "o200k_base".
	Name() string
	// Count returns the number of tokens text encodes to. It never fails
	// and never panics on any input, including invalid UTF-8.
	Count(text string) int
}

// Encoder is a Counter that also encodes to and decodes from token IDs.
// For every input, Count(text) == len(Encode(text)).
type Encoder interface {
	Counter
	// Encode returns the token IDs of text. Special-token markers such as
	// "<|endoftext|>" are encoded as ordinary text.
	Encode(text string) []int
	// Decode returns the text of tokens. IDs that belong to no token of
	// the encoding are skipped.
	Decode(tokens []int) string
}

// Encoding names accepted by Get.
const (
	// O200kBase is the BPE encoding of GPT-4o, GPT-4.1, o1, o3 and later models.
	O200kBase = "o200k_base"
	// CL100kBase is the BPE encoding of GPT-4, GPT-3.5-turbo and the
	// text-embedding-3 models.
	CL100kBase = "cl100k_base"
	// Heuristic is the model-free estimate of one token per four characters:
	// ceil(runes/4).
	Heuristic = "heuristic"
)

// ErrUnknownEncoding is wrapped by the errors of Get and GetEncoder for a
// name they do not know; test for it with errors.Is.
var ErrUnknownEncoding = errors.New("tokenizer: unknown encoding")

var (
	o200k  = newBPE(O200kBase, nextO200k, o200kSpecial, o200kRanks)
	cl100k = newBPE(CL100kBase, nextCL100k, cl100kSpecial, cl100kRanks)
	heur   = heuristic{}
)

// Get returns the Counter for the encoding name: O200kBase, CL100kBase or
// Heuristic. The same Counter is returned on every call for a name. The
// BPE ranks of an encoding are parsed on its first Count, Encode or Decode,
// not by Get. An unknown name returns an error wrapping ErrUnknownEncoding.
func Get(name string) (Counter, error) {
	switch name {
	case O200kBase:
		return o200k, nil
	case CL100kBase:
		return cl100k, nil
	case Heuristic:
		return heur, nil
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownEncoding, name, strings.Join(Names(), ", "))
}

// Default returns the Counter of O200kBase, the encoding of current OpenAI
// models: what agentmem counts with when it is given no Counter. It is
// Get(O200kBase), which cannot fail.
func Default() Counter { return o200k }

// GetEncoder returns the Encoder for O200kBase or CL100kBase. Any other name,
// Heuristic included (it has no token IDs), returns an error wrapping
// ErrUnknownEncoding.
func GetEncoder(name string) (Encoder, error) {
	switch name {
	case O200kBase:
		return o200k, nil
	case CL100kBase:
		return cl100k, nil
	}
	return nil, fmt.Errorf("%w %q for an encoder (encoders: %s, %s)", ErrUnknownEncoding, name, O200kBase, CL100kBase)
}

// Names returns the names Get accepts, sorted. The slice is the caller's.
func Names() []string {
	return []string{CL100kBase, Heuristic, O200kBase}
}

// NewHeuristic returns the Heuristic counter: ceil(runes/4), where each byte
// of invalid UTF-8 counts as one rune.
func NewHeuristic() Counter { return heur }

type heuristic struct{}

func (heuristic) Name() string { return Heuristic }

func (heuristic) Count(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}
