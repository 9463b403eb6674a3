package server

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/facts"
)

// factIDs returns the IDs of a facts answer.
func factIDs(fs []api.FactView) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

// TestFactsInTime: POST takes valid_from, valid_to and supersedes; the
// superseded fact is closed, not hidden, and as_of finds it for its
// period, in lists and searches.
func TestFactsInTime(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	var rem api.RememberResponse
	e.must(201, "POST", "/v1/users/alice/facts", `{"text":"Lives in Berlin","confidence":0.9,"valid_from":"2020-05-01T00:00:00+02:00"}`).json(t, &rem)
	berlin := rem.Fact
	if want := time.Date(2020, 4, 30, 22, 0, 0, 0, time.UTC); !berlin.ValidFrom.Equal(want) || !berlin.ValidTo.IsZero() {
		t.Fatalf("valid_from %v valid_to %v, want %v and none", berlin.ValidFrom, berlin.ValidTo, want)
	}
	e.must(201, "POST", "/v1/users/alice/facts", `{"text":"Has a cat"}`).json(t, &rem)
	if !rem.Fact.ValidFrom.Equal(now) {
		t.Errorf("default valid_from %v, want the time recorded %v", rem.Fact.ValidFrom, now)
	}
	cat := rem.Fact.ID

	now = now.Add(time.Hour)
	moved := "2026-02-01T00:00:00Z"
	r := e.must(200, "POST", "/v1/users/alice/facts", `{"text":"Lives in Paris","supersedes":"`+berlin.ID+`","valid_from":"`+moved+`"}`)
	r.json(t, &rem)
	if rem.Outcome != api.OutcomeSuperseded || rem.Previous == nil || rem.Previous.ID != berlin.ID || rem.Previous.ValidTo.Format(time.RFC3339) != moved ||
		rem.Previous.SupersededBy != rem.Fact.ID || rem.Fact.ValidFrom.Format(time.RFC3339) != moved {
		t.Fatalf("supersede: %s", r.body)
	}
	paris := rem.Fact.ID

	var list api.FactsResponse
	e.must(200, "GET", "/v1/users/alice/facts", nil).json(t, &list)
	if got := factIDs(list.Facts); len(got) != 2 || strings.Contains(strings.Join(got, ","), berlin.ID) {
		t.Fatalf("facts now: %v, want the cat and Paris", got)
	}
	var one api.FactResponse
	e.must(200, "GET", "/v1/users/alice/facts/"+berlin.ID, nil).json(t, &one)
	if one.Fact.ValidTo.Format(time.RFC3339) != moved || len(one.History) != 2 {
		t.Fatalf("the superseded fact: %+v", one)
	}
	e.must(200, "GET", "/v1/users/alice/facts?as_of=2025-12-24T18:00:00Z", nil).json(t, &list)
	if got := factIDs(list.Facts); len(got) != 1 || got[0] != berlin.ID || list.Facts[0].EffectiveConfidence >= 0.9 {
		t.Fatalf("as of Christmas 2025: %+v, want Berlin, with its confidence now", list.Facts)
	}
	e.must(200, "GET", "/v1/users/alice/facts?as_of="+url.QueryEscape(moved)+"&q=lives", nil).json(t, &list)
	if got := factIDs(list.Facts); len(got) != 1 || got[0] != paris || list.Facts[0].Score == nil {
		t.Fatalf("search as of the move: %v, want Paris", got)
	}
	e.must(200, "GET", "/v1/users/alice/facts?as_of=2019-01-01T00:00:00Z", nil).json(t, &list)
	if len(list.Facts) != 0 {
		t.Fatalf("as of 2019: %v, want none", factIDs(list.Facts))
	}

	// Superseding another user's fact, or one already superseded.
	e.must(201, "POST", "/v1/users/bob/facts", `{"text":"Lives in Oslo"}`).json(t, &rem)
	e.must(404, "POST", "/v1/users/alice/facts", `{"text":"Lives in Rome","supersedes":"`+rem.Fact.ID+`"}`)
	e.must(409, "POST", "/v1/users/alice/facts", `{"text":"Lives in Rome","supersedes":"`+berlin.ID+`"}`)

	before := e.dump()
	for _, tc := range []struct{ method, path, body, field string }{
		{"POST", "/v1/users/alice/facts", `{"text":"x","valid_from":"2026-01-01T00:00:00Z","valid_to":"2025-01-01T00:00:00Z"}`, "valid_to"},
		{"POST", "/v1/users/alice/facts", `{"text":"x","valid_to":"2020-01-01T00:00:00Z"}`, "valid_to"},
		{"POST", "/v1/users/alice/facts", `{"text":"x","valid_from":"yesterday"}`, "valid_from"},
		{"POST", "/v1/users/alice/facts", `{"text":"x","supersedes":"a/b"}`, "supersedes"},
		{"GET", "/v1/users/alice/facts?as_of=yesterday", "", "as_of"},
		{"GET", "/v1/users/alice/facts?as_of=2026-01-01T00:00:00Z&include_superseded=true", "", "as_of"},
	} {
		r := e.do(tc.method, tc.path, nilIfEmpty(tc.body))
		if r.code != 400 {
			t.Errorf("%s %.80s: status %d: %s", tc.method, tc.path, r.code, r.body)
			continue
		}
		if got := r.apiErr(t); got.Code != api.CodeInvalid || got.Field != tc.field {
			t.Errorf("%s %.80s %s: error %+v, want field %q", tc.method, tc.path, tc.body, got, tc.field)
		}
	}
	if e.dump() != before {
		t.Error("refused requests changed something")
	}
	_ = cat
}

// TestFactsFilter: filter=key:value keeps the facts whose metadata has
// every pair, in lists and searches; bad filters are 400s naming filter.
func TestFactsFilter(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	var rem api.RememberResponse
	e.must(201, "POST", "/v1/users/u/facts", `{"text":"Uses Postgres","metadata":{"project":"billing","kind":"tech"}}`).json(t, &rem)
	a := rem.Fact.ID
	e.must(201, "POST", "/v1/users/u/facts", `{"text":"Wants short reports","metadata":{"project":"billing"}}`)
	e.must(201, "POST", "/v1/users/u/facts", `{"text":"Uses SQLite","metadata":{"project":"cli","kind":"tech"}}`)
	var list api.FactsResponse
	e.must(200, "GET", "/v1/users/u/facts?filter=project:billing", nil).json(t, &list)
	if len(list.Facts) != 2 {
		t.Errorf("project:billing: %v", factIDs(list.Facts))
	}
	e.must(200, "GET", "/v1/users/u/facts?filter=project:billing&filter=kind:tech", nil).json(t, &list)
	if got := factIDs(list.Facts); len(got) != 1 || got[0] != a {
		t.Errorf("project:billing and kind:tech: %v, want %s", got, a)
	}
	e.must(200, "GET", "/v1/users/u/facts?q=uses&filter=kind:tech&filter=project:billing", nil).json(t, &list)
	if got := factIDs(list.Facts); len(got) != 1 || got[0] != a {
		t.Errorf("search with filters: %v, want %s", got, a)
	}
	many := "/v1/users/u/facts?"
	for i := range api.MaxFactFilters + 1 {
		many += "filter=k" + strings.Repeat("x", i) + ":v&"
	}
	for _, p := range []string{
		"/v1/users/u/facts?filter=nocolon", "/v1/users/u/facts?filter=:v", "/v1/users/u/facts?filter=k:a&filter=k:b",
		"/v1/users/u/facts?filter=" + url.QueryEscape("k:"+strings.Repeat("v", facts.MaxFieldBytes+1)), many,
	} {
		r := e.do("GET", p, nil)
		if got := r.apiErr(t); r.code != 400 || got.Field != "filter" {
			t.Errorf("GET %.100s: %d %s, want a 400 naming filter", p, r.code, r.body)
		}
	}
	if api.MaxFactFilters != facts.MaxMetadataFilters {
		t.Errorf("api.MaxFactFilters %d, facts.MaxMetadataFilters %d", api.MaxFactFilters, facts.MaxMetadataFilters)
	}
}

// TestFactPatchAndHistory: PATCH is a merge patch of text, confidence,
// metadata and validity; the history lists every change, before and
// after, with who made it, and the forget that ends it.
func TestFactPatchAndHistory(t *testing.T) {
	now := fixedNow
	e := newEnv(t, withLongTerm(&now))
	var rem api.RememberResponse
	e.must(201, "POST", "/v1/users/alice/facts", `{"text":"Works on billing","confidence":0.5,"metadata":{"project":"billing","team":"core"}}`).json(t, &rem)
	id := rem.Fact.ID
	path := "/v1/users/alice/facts/" + id
	now = now.Add(time.Hour)

	var fv api.FactView
	e.must(200, "PATCH", path, `{"text":"Works on invoicing","confidence":0.9,"metadata":{"project":"invoicing","team":null},"reason":"renamed"}`).json(t, &fv)
	if fv.ID != id || fv.Text != "Works on invoicing" || fv.Confidence != 0.9 || fv.EffectiveConfidence != 0.9 || len(fv.Metadata) != 1 || fv.Metadata["project"] != "invoicing" {
		t.Fatalf("after the patch: %+v", fv)
	}
	e.must(200, "PATCH", path, `{"valid_to":"2026-03-01T12:30:00Z"}`).json(t, &fv)
	if fv.ValidTo.IsZero() {
		t.Fatalf("valid_to not set: %+v", fv)
	}
	var list api.FactsResponse
	e.must(200, "GET", "/v1/users/alice/facts", nil).json(t, &list)
	if len(list.Facts) != 0 {
		t.Fatalf("a fact that ended still holds: %v", factIDs(list.Facts))
	}
	fv = api.FactView{}
	e.must(200, "PATCH", path, `{"valid_to":null,"metadata":null}`).json(t, &fv)
	if !fv.ValidTo.IsZero() || fv.Metadata != nil {
		t.Fatalf("null valid_to and metadata: %+v", fv)
	}

	before := e.dump()
	for _, tc := range []struct{ body, field string }{
		{`{"text":null}`, "text"},
		{`{"confidence":null}`, "confidence"},
		{`{"valid_from":null}`, "valid_from"},
		{`{"text":""}`, "text"},
		{`{"confidence":2}`, "confidence"},
		{`{"valid_to":"2020-01-01T00:00:00Z"}`, "valid_to"},
		{`{"valid_to":"soon"}`, "valid_to"},
		{`{"colour":"red"}`, "colour"},
		{`{"metadata":{"":"x"}}`, "metadata key"},
		{`{}`, ""},
		{`{"reason":"nothing"}`, ""},
	} {
		r := e.do("PATCH", path, tc.body)
		if got := r.apiErr(t); r.code != 400 || got.Code != api.CodeInvalid || got.Field != tc.field {
			t.Errorf("PATCH %s: %d %s, want a 400 naming %q", tc.body, r.code, r.body, tc.field)
		}
	}
	if e.dump() != before {
		t.Error("refused patches changed something")
	}
	e.must(404, "PATCH", "/v1/users/bob/facts/"+id, `{"text":"x"}`)
	e.must(404, "GET", "/v1/users/bob/facts/"+id+"/history", nil)
	e.must(404, "PATCH", "/v1/users/alice/facts/nope", `{"text":"x"}`)

	var h api.FactHistoryResponse
	e.must(200, "GET", path+"/history", nil).json(t, &h)
	var actions []string
	for _, c := range h.Changes {
		actions = append(actions, c.Action)
	}
	if strings.Join(actions, ",") != "added,updated,updated,updated" {
		t.Fatalf("history: %v", actions)
	}
	c := h.Changes[1]
	if c.By != "api" || c.Reason != "renamed" || !c.At.Equal(fixedNow.Add(time.Hour)) || c.Before.Text != "Works on billing" || c.After.Text != "Works on invoicing" ||
		c.Before.Confidence != 0.5 || c.After.Confidence != 0.9 || c.Before.Metadata["team"] != "core" || c.After.Metadata["team"] != "" {
		t.Errorf("the edit: %+v before %+v after %+v", c, c.Before, c.After)
	}
	if h.Changes[2].After.ValidTo.IsZero() || !h.Changes[3].After.ValidTo.IsZero() || h.Changes[0].After == nil || h.Changes[0].Before != nil {
		t.Errorf("history: %+v", h.Changes)
	}

	// Forgetting erases what the fact said, and the history shows it.
	e.must(204, "DELETE", path+"?reason=asked", nil)
	e.must(200, "GET", path+"/history", nil).json(t, &h)
	last := h.Changes[len(h.Changes)-1]
	if len(h.Changes) != 5 || last.Action != "forgotten" || last.Reason != "asked" || !strings.HasPrefix(last.Digest, "sha256:") {
		t.Fatalf("history after forget: %+v", h.Changes)
	}
	r := e.must(200, "GET", path+"/history", nil)
	if strings.Contains(string(r.body), "invoicing") || strings.Contains(string(r.body), "billing") {
		t.Errorf("the history of a forgotten fact keeps its text: %s", r.body)
	}
	e.must(404, "GET", "/v1/users/alice/facts/nope/history", nil)
}
