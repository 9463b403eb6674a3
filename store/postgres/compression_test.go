package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store"
)

// TestLargeBodiesCompression checks that a large body is stored
// compressed with lz4 where the server has it (migration 0005), and reads
// back unchanged.
func TestLargeBodiesCompression(t *testing.T) { largeBodiesCompression(t, testURL(t)) }

// TestLargeBodiesCompressionCitus is TestLargeBodiesCompression on a
// Citus cluster, where the bodies are stored in the workers' shards.
func TestLargeBodiesCompressionCitus(t *testing.T) { largeBodiesCompression(t, testenv.CitusURL(t)) }

func largeBodiesCompression(t *testing.T, url string) {
	st := openAt(t, url, Options{})
	ctx := context.Background()
	s, err := st.Create(ctx, store.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("the tool printed this line again, ", 400) // 13.6 kB, compressible
	if _, err := st.Append(ctx, store.AppendRequest{SessionID: s.ID, Steps: []agentmem.Step{action("a1", big)}}); err != nil {
		t.Fatal(err)
	}
	var method *string
	if err := st.pool.QueryRow(ctx, "SELECT pg_column_compression(body) FROM entries WHERE session_id = $1 AND seq = 1", s.ID).Scan(&method); err != nil {
		t.Fatal(err)
	}
	want := testenv.LargeValueCompression(t, url)
	if method == nil {
		t.Errorf("the body is stored uncompressed, want %s", want)
	} else if *method != want {
		t.Errorf("the body's compression is %s, want %s", *method, want)
	}
	resp, err := st.Read(ctx, store.ReadRequest{SessionID: s.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Entries[0].Step.(*agentmem.ActionStep).ModelOutput; got != big {
		t.Errorf("read back %d bytes, want the %d appended", len(got), len(big))
	}
}
