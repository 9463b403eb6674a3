package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/mcp"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

// damagedList is a store whose List also reports a damaged session, as a
// database backend's does for a row that does not decode.
type damagedList struct{ store.Driver }

func (s damagedList) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	resp, err := s.Driver.List(ctx, req)
	if err != nil {
		return nil, err
	}
	d := &agentmem.DamagedError{Kind: "session", ID: "broken", Err: errors.New("its metadata does not decode")}
	resp.Damaged = append(resp.Damaged, d)
	agentmem.ReportDamaged(ctx, d)
	return resp, nil
}

// TestListSessionsDamaged: list_sessions answers the healthy sessions and
// names the damaged ones.
func TestListSessionsDamaged(t *testing.T) {
	mem := memstore.New(memstore.Options{Clock: func() time.Time { return t0 }})
	t.Cleanup(func() { mem.Close() })
	if _, err := mem.Create(context.Background(), store.CreateRequest{ID: "fine"}); err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, store.New(damagedList{mem}), "")
	var out mcp.ListSessionsOutput
	call(t, e.cs, mcp.ToolListSessions, map[string]any{}, &out)
	if len(out.Sessions) != 1 || out.Sessions[0].ID != "fine" || len(out.Damaged) != 1 || out.Damaged[0].ID != "broken" || out.Damaged[0].Error == "" {
		t.Errorf("list_sessions = %+v", out)
	}
}
