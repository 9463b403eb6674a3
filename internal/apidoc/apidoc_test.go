package apidoc_test

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/apidoc"
	"github.com/agentmem/agentmem/server"
)

var update = flag.Bool("update", false, "rewrite docs/api.md")

const reference = "../../docs/api.md"

// TestReferenceIsCurrent: docs/api.md is what the server's OpenAPI
// document renders to; -update rewrites it.
func TestReferenceIsCurrent(t *testing.T) {
	got, err := apidoc.Render(server.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(reference, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/api.md is not what server/openapi.json renders to: run go test ./internal/apidoc -run TestReferenceIsCurrent -update")
	}
}

// TestReferenceShowsEveryRoute: each route and schema of the document has
// its section, and shared parameters and answers are resolved.
func TestReferenceShowsEveryRoute(t *testing.T) {
	out, err := apidoc.Render(server.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"### <a id=\"post-v1-sessions\"></a>`POST /v1/sessions`",
		"### <a id=\"get-v1-sessions-id-context\"></a>`GET /v1/sessions/{id}/context`",
		"| `Idempotency-Key` | header | no |",
		"| `id` | path | yes |",
		"### <a id=\"schema-session\"></a>Session",
		"| 503 | ",
		"[Session](#schema-session)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
	if _, err := apidoc.Render([]byte("{")); err == nil {
		t.Error("a broken document renders")
	}
}
