package storekit_test

import (
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/storekit"
)

// TestNewSessionCopies checks that the session NewSession builds shares
// nothing with the request, so a caller that changes the request later
// cannot change what a backend stored.
func TestNewSessionCopies(t *testing.T) {
	facts := true
	req := store.CreateRequest{
		ID:           "s",
		Metadata:     map[string]string{"k": "v"},
		Pinning:      &agentmem.Pinning{},
		AutoCompact:  &store.AutoCompact{},
		ExtractFacts: &facts,
		TTL:          time.Hour,
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := storekit.NewSession(req, now)
	if s.Metadata["k"] != "v" || s.Pinning == nil || s.AutoCompact == nil || s.ExtractFacts == nil || !*s.ExtractFacts {
		t.Fatalf("settings not carried over: %+v", s)
	}
	if s.Pinning == req.Pinning || s.AutoCompact == req.AutoCompact || s.ExtractFacts == req.ExtractFacts {
		t.Fatal("the session shares a setting with the request")
	}
	req.Metadata["k"] = "changed"
	if s.Metadata["k"] != "v" {
		t.Fatal("changing the request's metadata changed the session's")
	}
	if s.Retention != store.SessionRetention || !s.ExpiresAt.Equal(now.Add(time.Hour)) || !s.CreatedAt.Equal(now) || !s.UpdatedAt.Equal(now) {
		t.Fatalf("defaults: %+v", s)
	}
}
