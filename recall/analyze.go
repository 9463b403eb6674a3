package recall

import (
	"hash/maphash"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// stopWords are the English stop words Tokenize drops: the NLTK list, plus
// the lone letters that splitting contractions leaves (the s of "Anna's").
// maxStopWord is the length of the longest: a longer word needs no lookup.
var stopWords, maxStopWord = func() (map[string]bool, int) {
	words := strings.Fields(`
a about above after again against ain all am an and any are aren arent as at
b be because been before being below between both but by c can couldn couldnt
d did didn didnt do does doesn doesnt doing don dont down during e each f few
for from further g h had hadn hadnt has hasn hasnt have haven havent having he
her here hers herself him himself his how i if in into is isn isnt it its
itself j just k l ll m ma me mightn more most mustn my myself n needn no nor
not now o of off on once only or other our ours ourselves out over own p q r
re s same shan she should shouldn so some such t than that the their theirs
them themselves then there these they this those through to too u under until
up v ve very w was wasn we were weren what when where which while who whom why
will with won wouldn x y you your yours yourself yourselves z`)
	m := make(map[string]bool, len(words))
	longest := 0
	for _, w := range words {
		m[w] = true
		longest = max(longest, len(w))
	}
	return m, longest
}()

// IsStopWord reports whether the lower-case word is an English stop word
// that Tokenize drops.
func IsStopWord(word string) bool { return stopWords[word] }

// MaxTermBytes is the longest term Tokenize produces: longer words are cut
// to it (on a rune boundary), as every backend can index such a term.
const MaxTermBytes = 255

// Tokenize analyzes text into index terms: it lower-cases the text, splits
// it on every rune that is not a Unicode letter or digit, drops English
// stop words, cuts words longer than MaxTermBytes and stems the rest (see
// Stem). The same analysis is applied to documents and queries.
//
// It gives what strings.FieldsFunc(strings.ToLower(text), not a letter
// or digit) would, word by word (an invalid UTF-8 byte is a separator),
// in one pass that lower-cases each word into a buffer and stems from
// the buffer: indexing a turn tokenizes all of its text.
//
// The terms that are not stems (numbers, identifiers, words with a letter
// outside a-z) share one string: a caller that keeps such a term long
// after the others keeps it in a string of its own (see ownTerm).
func Tokenize(text string) []string {
	// The terms are collected in buffers kept for the next call, then
	// copied into a slice of their exact number: a text's number of terms
	// is not known before, and growing the result as they come allocated
	// several times its size. A term that is not a stem of the cache (a
	// number, an identifier, a word outside a-z) is its word's bytes: those
	// are gathered in one buffer and become one string, which the terms
	// share, rather than a string each.
	sc := tokenScratch.Get().(*tokenBuffers)
	terms, word, own, spans := sc.terms[:0], sc.word[:0], sc.own[:0], sc.spans[:0]
	emit := func() {
		if len(word) == 0 || len(word) <= maxStopWord && stopWords[string(word)] {
			word = word[:0]
			return
		}
		if len(word) > MaxTermBytes {
			word = []byte(strings.ToValidUTF8(string(word[:MaxTermBytes]), ""))
		}
		if st, ok := stemBytes(word); ok {
			terms = append(terms, st)
		} else {
			spans = append(spans, termSpan{term: len(terms), start: len(own), end: len(own) + len(word)})
			own = append(own, word...)
			terms = append(terms, "")
		}
		word = word[:0]
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				word = append(word, c)
			case 'A' <= c && c <= 'Z':
				word = append(word, c+'a'-'A')
			default:
				emit()
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		if r == utf8.RuneError && n == 1 {
			emit() // strings.ToLower makes it U+FFFD, a separator
			continue
		}
		if r = unicode.ToLower(r); unicode.IsLetter(r) || unicode.IsDigit(r) {
			word = utf8.AppendRune(word, r)
		} else {
			emit()
		}
	}
	emit()
	out := make([]string, len(terms))
	copy(out, terms)
	if len(spans) > 0 {
		all := string(own)
		for _, sp := range spans {
			out[sp.term] = all[sp.start:sp.end]
		}
	}
	if cap(terms) <= maxScratchTerms && cap(own) <= maxScratchBytes && cap(word) <= maxScratchBytes {
		clear(terms) // the buffers keep no text alive
		sc.terms, sc.word, sc.own, sc.spans = terms[:0], word[:0], own[:0], spans[:0]
		tokenScratch.Put(sc)
	}
	return out
}

// ownTerm returns a term of Tokenize that a caller keeps, in a string of
// its own when it may share one with the other terms of its text.
func ownTerm(t string) string {
	if asIs(t) {
		return strings.Clone(t)
	}
	return t
}

// tokenBuffers are Tokenize's buffers, reused by later calls
// (tokenScratch) unless they grew beyond maxScratchTerms terms or
// maxScratchBytes bytes: the terms, the current word, and the bytes of
// the terms that are their words (own), each at its span.
type tokenBuffers struct {
	terms []string
	word  []byte
	own   []byte
	spans []termSpan
}

// termSpan is where a term's bytes are in tokenBuffers.own.
type termSpan struct{ term, start, end int }

var tokenScratch = sync.Pool{New: func() any { return new(tokenBuffers) }}

const (
	maxScratchTerms = 1 << 16
	maxScratchBytes = 1 << 20
)

// stemBytes is Stem of a word in a buffer the caller reuses. ok is false
// for a word that Stem returns as it is (asIs): the caller makes the
// term of the word's bytes.
func stemBytes(word []byte) (stem string, ok bool) {
	if asIs(word) {
		return "", false
	}
	if len(word) > maxCachedStem {
		return english.Stem(string(word), true), true
	}
	return stems.getBytes(word), true
}

// asIs reports whether Stem returns the lower-case word as it is, without
// stemming it: a word of two letters or fewer, or with a byte outside
// a-z.
func asIs[T string | []byte](word T) bool {
	if len(word) <= 2 {
		return true
	}
	for i := 0; i < len(word); i++ {
		if c := word[i]; c < 'a' || c > 'z' {
			return true
		}
	}
	return false
}

// Stem reduces a lower-case English word to its stem with the Snowball
// English (Porter2) stemmer. Words of two letters or less, and words with
// a letter outside a-z, are returned unchanged.
func Stem(word string) string {
	if asIs(word) {
		return word
	}
	if len(word) > maxCachedStem {
		return english.Stem(word, true)
	}
	return stems.get(word)
}

// The stem cache: the Snowball stemmer costs microseconds a word (it
// converts the word to runes and tries suffix lists), most of the CPU of
// indexing a turn, and the words of a conversation repeat. Words up to
// maxCachedStem bytes are cached, in shards of at most stemShardCap
// entries; a full shard is emptied (the cache is bounded, a few MB at
// most, and refills with the words in use).
const (
	maxCachedStem = 24
	stemShards    = 16
	stemShardCap  = 8192
)

type stemShard struct {
	mu sync.RWMutex
	m  map[string]string
}

type stemCache struct {
	seed   maphash.Seed
	shards [stemShards]stemShard
}

var stems = newStemCache()

func newStemCache() *stemCache {
	c := &stemCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string]string)
	}
	return c
}

func (c *stemCache) get(word string) string {
	sh := &c.shards[maphash.String(c.seed, word)%stemShards]
	sh.mu.RLock()
	st, ok := sh.m[word]
	sh.mu.RUnlock()
	if ok {
		return st
	}
	return c.add(sh, word)
}

// getBytes is get of a word in a buffer, which it does not keep.
func (c *stemCache) getBytes(word []byte) string {
	sh := &c.shards[maphash.Bytes(c.seed, word)%stemShards]
	sh.mu.RLock()
	st, ok := sh.m[string(word)]
	sh.mu.RUnlock()
	if ok {
		return st
	}
	return c.add(sh, string(word))
}

// add stems a word missing from its shard sh and caches it.
func (c *stemCache) add(sh *stemShard, word string) string {
	st := english.Stem(word, true)
	sh.mu.Lock()
	if len(sh.m) >= stemShardCap {
		clear(sh.m)
	}
	st = strings.Clone(st) // not a view of a longer text
	sh.m[strings.Clone(word)] = st
	sh.mu.Unlock()
	return st
}
