package recall

import (
	"hash/maphash"
	"strings"
	"sync"
	"unicode"

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
// stop words, cuts words longer than MaxTermBytes and stems the rest (see Stem). The same analysis is applied to
// documents and queries.
func Tokenize(text string) []string {
	var terms []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopWords[f] {
			continue
		}
		if len(f) > MaxTermBytes {
			f = strings.ToValidUTF8(f[:MaxTermBytes], "")
		}
		terms = append(terms, Stem(f))
	}
	return terms
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
	st = english.Stem(word, true)
	sh.mu.Lock()
	if len(sh.m) >= stemShardCap {
		clear(sh.m)
	}
	st = strings.Clone(st) // not a view of a longer text
	sh.m[strings.Clone(word)] = st
	sh.mu.Unlock()
	return st
}
