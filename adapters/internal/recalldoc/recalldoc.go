// Package recalldoc turns the hits of an agentmem recall search into the
// documents of the frameworks' retrievers (langchaingo, eino, Genkit). It
// does so one way for all of them: the same content, the same metadata
// keys.
package recalldoc

import (
	"strings"
	"time"

	"github.com/agentmem/agentmem/api"
)

// The metadata keys a Doc sets beside the document's own metadata (which
// never replaces them).
const (
	// KeyID is the recall document's ID ("<session>#<seq>" for a turn).
	KeyID = "id"
	// KeyScore is the hit's score (float64), higher is more relevant.
	KeyScore = "score"
	// KeySessionID and KeyStep name the session and the step of a
	// conversation turn (a string and an int64); absent for other
	// documents.
	KeySessionID = "session_id"
	KeyStep      = "step"
	// KeyTime is when the document was written, in RFC 3339, when known.
	KeyTime = "time"
	// KeyWindow lists the IDs of the turns of the hit's window, in
	// order, when neighbours were asked for (the content is then theirs).
	KeyWindow = "window"
)

// Doc is one hit as a framework's document holds it.
type Doc struct {
	ID string
	// Content is the hit's text. When the search asked for neighbouring
	// turns, it is the texts of its window in order (the hit among them),
	// separated by a blank line.
	Content  string
	Metadata map[string]any
	Score    float64
}

// FromHit returns the document of a hit.
func FromHit(h api.RecallHit) Doc {
	md := make(map[string]any, len(h.Metadata)+6)
	for k, v := range h.Metadata {
		md[k] = v
	}
	md[KeyID] = h.ID
	md[KeyScore] = h.Score
	if h.SessionID != "" {
		md[KeySessionID] = h.SessionID
		md[KeyStep] = h.Step
	}
	if h.Time != nil {
		md[KeyTime] = h.Time.UTC().Format(time.RFC3339Nano)
	}
	content := h.Text
	if len(h.Window) > 0 {
		texts := make([]string, len(h.Window))
		ids := make([]string, len(h.Window))
		for i, d := range h.Window {
			texts[i], ids[i] = d.Text, d.ID
		}
		content = strings.Join(texts, "\n\n")
		md[KeyWindow] = ids
	}
	return Doc{ID: h.ID, Content: content, Metadata: md, Score: h.Score}
}

// FromHits returns the documents of hits, in order.
func FromHits(hits []api.RecallHit) []Doc {
	out := make([]Doc, len(hits))
	for i, h := range hits {
		out[i] = FromHit(h)
	}
	return out
}
