package server

import (
	"context"
	"net/http"
	"testing"

	"github.com/agentmem/agentmem/recall"
)

// FuzzDecodeUpsertRecall: what the decoder accepts the index accepts.
func FuzzDecodeUpsertRecall(f *testing.F) {
	f.Add([]byte(`{"documents":[{"id":"n1","text":"port 5433","metadata":{"kind":"note"},"time":"2026-03-01T12:00:00Z","group":"g","seq":2}]}`))
	f.Add([]byte(`{"documents":[{"text":"x","embedding":[0.1,0.2],"embedding_model":"m"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		docs, e := decodeUpsertRecall(body, "tenant")
		if !checkDecoded(t, body, e) {
			return
		}
		ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
		if err := ix.Upsert(context.Background(), docs...); err != nil {
			t.Fatalf("accepted documents refused by the index: %v", err)
		}
	})
}

// FuzzDecodeRecallSearch: the query parameters of a recall search (scope,
// filter, similarity and the rest) are refused with a 400 of their own, or
// make a search the index accepts.
func FuzzDecodeRecallSearch(f *testing.F) {
	f.Add("q=quick+fox&k=3&scope=user:alice&filter=tag:work&filter=kind:note&similarity=tfidf&before=1")
	f.Add("q=fox&filter=user:bob&scope=user:alice")
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r, err := http.NewRequest(http.MethodGet, "/v1/recall/search", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.URL.RawQuery = rawQuery
		// As the route does: its parameters are checked first.
		if e := onlyParams(r.URL.Query(), "q", "k", "scope", "before", "after", "fresh", "filter...", "similarity"); e != nil {
			checkRefusal(t, e)
			return
		}
		q, e := decodeRecallSearch(r, "tenant")
		if e != nil {
			checkRefusal(t, e)
			return
		}
		ix := recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})
		if err := ix.Upsert(context.Background(), recall.Doc{ID: "d", Tenant: "tenant", Text: "the quick brown fox"}); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Search(context.Background(), q); err != nil {
			t.Fatalf("accepted query %q refused by the index: %v", rawQuery, err)
		}
	})
}

// FuzzRemember drives the facts route with arbitrary bodies: a 2xx or a
// 4xx with an error body, never a 5xx, and a refusal writes nothing.
func FuzzRemember(f *testing.F) {
	f.Add([]byte(`{"text":"Prefers tea","confidence":0.7,"source":{"session_id":"s","step_seq":3,"agent":"a"},"metadata":{"k":"v"}}`))
	f.Add([]byte(`{"text":""}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		now := fixedNow
		e := newEnv(t, withLongTerm(&now))
		r := e.do(http.MethodPost, "/v1/users/u/facts", body)
		list, err := e.srv.cfg.Facts.List(context.Background(), "", "u", true)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case r.code == http.StatusCreated:
			if len(list) != 1 {
				t.Fatalf("201 with %d facts", len(list))
			}
		case r.code >= 400 && r.code < 500:
			ae := r.apiErr(t)
			checkRefusal(t, &Error{Status: r.code, Code: ae.Code, Message: ae.Message, Field: ae.Field})
			if len(list) != 0 {
				t.Fatalf("a refusal (%s) wrote %+v", r.body, list)
			}
		default:
			t.Fatalf("status %d: %s", r.code, r.body)
		}
	})
}
