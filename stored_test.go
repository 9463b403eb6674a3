package agentmem_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
)

// TestDamagedError: a DamagedError is ErrDamaged and its cause, and says
// which record it is.
func TestDamagedError(t *testing.T) {
	cause := json.Unmarshal([]byte(`{"m":`), new(any))
	err := error(&agentmem.DamagedError{Kind: "session", Tenant: "acme", ID: "s1", Err: cause})
	if !errors.Is(err, agentmem.ErrDamaged) || !errors.Is(err, cause) || errors.Is(err, agentmem.ErrUnavailable) {
		t.Fatalf("%v does not wrap ErrDamaged and its cause alone", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `session "s1" of tenant "acme" is damaged`) || !strings.Contains(msg, cause.Error()) {
		t.Fatalf("message %q", msg)
	}
	if !errors.Is(agentmem.ErrExhausted, agentmem.ErrUnavailable) {
		t.Fatal("ErrExhausted is not ErrUnavailable")
	}
}

// TestReportDamaged: a report reaches every reporter of the context, the
// newest first, and none of a context it was not given to.
func TestReportDamaged(t *testing.T) {
	var got []string
	base := context.Background()
	agentmem.ReportDamaged(base, &agentmem.DamagedError{ID: "nobody hears"})
	outer := agentmem.WithDamageReporter(base, func(d *agentmem.DamagedError) { got = append(got, "outer:"+d.ID) })
	inner := agentmem.WithDamageReporter(outer, func(d *agentmem.DamagedError) { got = append(got, "inner:"+d.ID) })
	agentmem.ReportDamaged(inner, &agentmem.DamagedError{ID: "a"})
	agentmem.ReportDamaged(outer, &agentmem.DamagedError{ID: "b"})
	if want := []string{"inner:a", "outer:a", "outer:b"}; !slices.Equal(got, want) {
		t.Fatalf("reports %v, want %v", got, want)
	}
}
