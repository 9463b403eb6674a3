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
var stopWords = func() map[string]bool {
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
	for _, w := range words {
		m[w] = true
	}
	return m
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
func Tokenize(text string) []string {
	terms := make([]string, 0, len(text)/8)
	var word []byte
	emit := func() {
		if len(word) == 0 || stopWords[string(word)] {
			word = word[:0]
			return
		}
		if len(word) > MaxTermBytes {
			word = []byte(strings.ToValidUTF8(string(word[:MaxTermBytes]), ""))
		}
		terms = append(terms, stemBytes(word))
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
	return terms
}

// stemBytes is Stem of a word in a buffer the caller reuses.
func stemBytes(word []byte) string {
	if len(word) <= 2 {
		return string(word)
	}
	for _, c := range word {
		if c < 'a' || c > 'z' {
			return string(word)
		}
	}
	if len(word) > maxCachedStem {
		return english.Stem(string(word), true)
	}
	return stems.getBytes(word)
}

// Stem reduces a lower-case English word to its stem with the Snowball
// English (Porter2) stemmer. Words of two letters or less, and words with
// a letter outside a-z, are returned unchanged.
func Stem(word string) string {
	if len(word) <= 2 {
		return word
	}
	for i := 0; i < len(word); i++ {
		if c := word[i]; c < 'a' || c > 'z' {
			return word
		}
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
