package recall

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/kljensen/snowball/english"
)

// The stem cache gives what the stemmer gives, for words seen once or
// many times, from many goroutines, and stays bounded.
func TestStemCache(t *testing.T) {
	words := strings.Fields("running runs ran connection connections connected generously abilities the university universal relational relativity happily skies dying")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				w := words[(i+g)%len(words)]
				if i%7 == 0 {
					w = fmt.Sprintf("%sx%d", w, i) // many distinct words: shards fill and empty
				}
				if got, want := Stem(w), english.Stem(w, true); got != want {
					t.Errorf("Stem(%q) = %q, want %q", w, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range stems.shards {
		if n := len(stems.shards[i].m); n > stemShardCap {
			t.Fatalf("shard %d holds %d stems, more than %d", i, n, stemShardCap)
		}
	}
}
