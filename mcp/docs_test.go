package mcp_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsMatchTools: docs/mcp.md's table of tools lists exactly the
// server's tools, with the hints a host gets, names every argument of each,
// and calls none of the required ones optional.
func TestDocsMatchTools(t *testing.T) {
	b, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][2]string{} // tool -> hints, description
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([^|]+) \\| (.*) \\|$")
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		rows[m[1]] = [2]string{strings.TrimSpace(m[2]), m[3]}
	}
	e := newLongTerm(t).env(t, "acme")
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	optional := regexp.MustCompile("optional ([^;()]*)")
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		r, ok := rows[tool.Name]
		if !ok {
			t.Errorf("docs/mcp.md has no row for %s", tool.Name)
			continue
		}
		hints := "writes"
		switch a := tool.Annotations; {
		case a.ReadOnlyHint:
			hints = "read-only"
		case a.DestructiveHint != nil && *a.DestructiveHint:
			hints = "destructive"
		}
		if r[0] != hints {
			t.Errorf("docs/mcp.md says %s is %q; its annotations say %q", tool.Name, r[0], hints)
		}
		schema := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		var required []string
		if req, ok := schema["required"].([]any); ok {
			for _, x := range req {
				required = append(required, x.(string))
			}
		}
		for p := range props {
			if !strings.Contains(r[1], "`"+p+"`") {
				t.Errorf("docs/mcp.md does not name %s's argument %s", tool.Name, p)
			}
		}
		for _, m := range optional.FindAllStringSubmatch(r[1], -1) {
			for _, p := range required {
				if strings.Contains(m[1], "`"+p+"`") {
					t.Errorf("docs/mcp.md calls %s's required argument %s optional", tool.Name, p)
				}
			}
		}
	}
	for name := range rows {
		if !slices.Contains(names, name) {
			t.Errorf("docs/mcp.md lists %s, which the server does not have", name)
		}
	}
}
