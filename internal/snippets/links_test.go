package snippets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinks checks that every relative link of README.md and docs/*.md
// names a file of the repository and, for a Markdown file, an anchor it
// has: moving a section must not leave a link behind.
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = Anchors(src)
		return anchors[path]
	}
	for _, f := range docFiles(t, root) {
		path := filepath.Join(root, f)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range Links(src) {
			target := path
			if l.Path != "" {
				target = filepath.Join(filepath.Dir(path), filepath.FromSlash(l.Path))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s:%d: the link to %s names no file", f, l.Line, l.Path)
				continue
			}
			if l.Anchor != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[l.Anchor] {
				t.Errorf("%s:%d: %s has no anchor #%s", f, l.Line, filepath.Base(target), l.Anchor)
			}
		}
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"From SQLite to PostgreSQL to Citus":                "from-sqlite-to-postgresql-to-citus",
		"4. Plug it into the OpenAI Agents SDK":             "4-plug-it-into-the-openai-agents-sdk",
		"Sessions: `/`":                                     "sessions-",
		"What the model saw: `/sessions/{id}/context?at=N`": "what-the-model-saw-sessionsidcontextatn",
		"Health, metrics, logs":                             "health-metrics-logs",
		"Google's ADK (google.golang.org/adk)":              "googles-adk-googlegolangorgadk",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestAnchorsRepeatedHeadings(t *testing.T) {
	src := "# Doc\n## Tests\n```sh\n## not a heading\n```\n## Tests\n<a id=\"x\"></a>\n"
	got := Anchors([]byte(src))
	for _, want := range []string{"doc", "tests", "tests-1", "x"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a line in a code block made an anchor: %v", got)
	}
}
