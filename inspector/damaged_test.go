package inspector_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// damagedList is a store whose List also reports a damaged session, as
// a database backend's does for a row that does not decode.
type damagedList struct{ store.Driver }

func (s damagedList) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	resp, err := s.Driver.List(ctx, req)
	if err != nil {
		return nil, err
	}
	d := &agentmem.DamagedError{Kind: "session", ID: "broken-1", Err: errors.New("its metadata does not decode: unexpected end of JSON input")}
	resp.Damaged = append(resp.Damaged, d)
	agentmem.ReportDamaged(ctx, d)
	return resp, nil
}

// TestSessionsDamaged: the sessions page lists the healthy sessions and
// names the damaged ones with why, rather than failing.
func TestSessionsDamaged(t *testing.T) {
	mem := memstore.New(memstore.Options{})
	t.Cleanup(func() { mem.Close() })
	if _, err := mem.Create(context.Background(), store.CreateRequest{ID: "healthy-1"}); err != nil {
		t.Fatal(err)
	}
	in, err := inspector.New(inspector.Config{Store: store.New(damagedList{mem})})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, in, "/", http.StatusOK)
	for _, want := range []string{`href="/sessions/healthy-1"`, `id="damaged"`, "broken-1", "its metadata does not decode"} {
		if !strings.Contains(body, want) {
			t.Errorf("the sessions page lacks %q:\n%s", want, body)
		}
	}
}
