package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
)

// TestRecallSearchBytes: a search whose hits would pass
// api.MaxRecallSearchBytes answers the best that fit and next_offset;
// searching again from it gives the rest.
func TestRecallSearchBytes(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	const n, size = 40, 250 << 10
	for part := range 2 {
		var docs []api.RecallDocument
		for i := part * n / 2; i < (part+1)*n/2; i++ {
			text := fmt.Sprintf("zebra %d ", i)
			docs = append(docs, api.RecallDocument{ID: fmt.Sprintf("d%02d", i), Text: text + strings.Repeat("x", size-len(text))})
		}
		e.must(200, "POST", "/v1/recall", api.UpsertRecallRequest{Documents: docs})
	}
	seen := map[string]bool{}
	offset, answers := 0, 0
	for {
		r := e.must(200, "GET", fmt.Sprintf("/v1/recall/search?q=zebra&k=%d&offset=%d", n-offset, offset), nil)
		if len(r.body) > api.MaxRecallSearchBytes+4096 {
			t.Errorf("an answer of %d bytes", len(r.body))
		}
		var res api.RecallSearchResponse
		r.json(t, &res)
		answers++
		for i, h := range res.Hits {
			if seen[h.ID] {
				t.Fatalf("hit %d after offset %d, %s, was in an earlier answer", i, offset, h.ID)
			}
			seen[h.ID] = true
		}
		if res.NextOffset == 0 {
			break
		}
		if res.NextOffset != offset+len(res.Hits) || len(res.Hits) == 0 {
			t.Fatalf("next_offset %d after %d hits from %d", res.NextOffset, len(res.Hits), offset)
		}
		offset = res.NextOffset
	}
	if len(seen) != n || answers < 2 {
		t.Fatalf("%d hits in %d answers, want %d in more than one", len(seen), answers, n)
	}
	ae := e.must(400, "GET", fmt.Sprintf("/v1/recall/search?q=zebra&offset=%d", api.MaxRecallOffset+1), nil).apiErr(t)
	if ae.Field != "offset" || !strings.Contains(ae.Message, fmt.Sprintf("from 0 to %d", api.MaxRecallOffset)) {
		t.Errorf("offset out of range: %+v", ae)
	}
}
