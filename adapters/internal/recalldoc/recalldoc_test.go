package recalldoc

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
)

func TestFromHit(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	doc := FromHit(api.RecallHit{
		RecallDocument: api.RecallDocument{ID: "note", Text: "the text", Time: &at,
			Metadata: map[string]string{"source": "runbook", KeyID: "not the ID", KeyScore: "high"}},
		Score: 0.5,
	})
	want := Doc{ID: "note", Content: "the text", Score: 0.5, Metadata: map[string]any{
		"source": "runbook", KeyID: "note", KeyScore: 0.5, KeyTime: "2026-03-01T11:00:00Z",
	}}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("document %#v\nwant %#v", doc, want)
	}

	// A turn with its window: the window's texts, the turn's place.
	turn := FromHit(api.RecallHit{
		RecallDocument: api.RecallDocument{ID: "s#2", Text: "two"},
		Score:          1, SessionID: "s", Step: 2,
		Window: []api.RecallDocument{{ID: "s#1", Text: "one"}, {ID: "s#2", Text: "two"}, {ID: "s#3", Text: "three"}},
	})
	want = Doc{ID: "s#2", Content: "one\n\ntwo\n\nthree", Score: 1, Metadata: map[string]any{
		KeyID: "s#2", KeyScore: 1.0, KeySessionID: "s", KeyStep: int64(2), KeyWindow: []string{"s#1", "s#2", "s#3"},
	}}
	if !reflect.DeepEqual(turn, want) {
		t.Errorf("turn %#v\nwant %#v", turn, want)
	}
	if docs := FromHits(nil); len(docs) != 0 {
		t.Errorf("FromHits(nil) = %v", docs)
	}
}
