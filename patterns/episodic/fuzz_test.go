package episodic

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// FuzzEpisodeOf decodes an episode's header from its session's metadata,
// which another process or version may have written: it must never panic,
// must refuse malformed marks with ErrInvalid, and must never let a
// reserved key through as the caller's metadata.
func FuzzEpisodeOf(f *testing.F) {
	f.Add("episode", "2026-03-01T09:00:00.000000000Z", "title", "trip")
	f.Add("episode", "2026-03-01T09:00:00+02:00", "agentmem.other", "x")
	f.Add("hierarchy", "", "", "")
	f.Add("episode", "yesterday", "k", "v")
	f.Fuzz(func(t *testing.T, pattern, started, key, value string) {
		s := &store.Session{ID: "ep-1", Metadata: map[string]string{metaPattern: pattern, metaStarted: started, key: value}}
		ep, err := episodeOf(s)
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		for k := range ep.Metadata {
			if strings.HasPrefix(k, ReservedPrefix) {
				t.Fatalf("reserved key %q in the caller's metadata", k)
			}
		}
		if again := ep.Started.UTC().Format(startedLayout); !strings.HasSuffix(again, "Z") {
			t.Fatalf("start time %v does not write back in UTC", ep.Started)
		}
	})
}
