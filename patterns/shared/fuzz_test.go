package shared

import (
	"errors"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
)

// FuzzEntryFromStep decodes a pool entry from a log step's metadata, which
// another process or version may have written: it must never panic,
// refuse bad input with ErrInvalid, and what it accepts must encode to a
// step that decodes to the same entry.
func FuzzEntryFromStep(f *testing.F) {
	f.Add("fact", "alice", "team", "backend", "2026-03-01T09:00:00Z", "run-1", "12", "wiki")
	f.Add("insight", "bob", "global", "", "", "", "", "")
	f.Add("insight", "", "private", "x", "yesterday", "", "-3", "")
	f.Add("note", "a\x00b", "public", "", "", "", "1e3", "")
	f.Fuzz(func(t *testing.T, kind, author, scope, team, provTime, provSess, provStep, source string) {
		step := &agentmem.ScratchpadStep{StepInfo: agentmem.StepInfo{ID: "e1", Time: time.Unix(0, 0).UTC(), Metadata: map[string]string{
			metaKind: kind, metaAuthor: author, metaScope: scope, metaTeam: team,
			metaProvTime: provTime, metaProvSess: provSess, metaProvStep: provStep, metaProvSource: source,
		}}, Content: "text"}
		e, err := entryFromStep(7, step)
		if err != nil {
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		again, err := entryFromStep(7, entryStep(e))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if again.Provenance.Time.Equal(e.Provenance.Time) {
			again.Provenance.Time = e.Provenance.Time
		}
		if *again != *e {
			t.Fatalf("round trip: %+v != %+v", again, e)
		}
	})
}
