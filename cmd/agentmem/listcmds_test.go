package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/store"
)

func TestSessionsList(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	env := map[string]string{"AGENTMEM_STORE": url}

	code, stdout, stderr := runCLI(t, env, "", "sessions", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 4 || !regexp.MustCompile(`^ID +TENANT +USER +AGENT +LAST SEQ +UPDATED$`).MatchString(lines[0]) {
		t.Fatalf("want a header and 3 sessions:\n%s", stdout)
	}
	if !regexp.MustCompile(`(?m)^s1 +- +alice +coder +8 +\d{4}-`).MatchString(stdout) {
		t.Errorf("s1's line is missing:\n%s", stdout)
	}

	// --json: one session a line, as the store has it; filters and a limit.
	code, stdout, _ = runCLI(t, env, "", "sessions", "list", "--user", "alice", "--json")
	var ids []string
	dec := json.NewDecoder(strings.NewReader(stdout))
	for dec.More() {
		var s store.Session
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		if s.UserID != "alice" {
			t.Errorf("--user alice listed %+v", s)
		}
		ids = append(ids, s.ID)
	}
	if code != 0 || len(ids) != 2 {
		t.Errorf("--user alice --json: exit %d, sessions %v", code, ids)
	}
	code, stdout, _ = runCLI(t, env, "", "sessions", "list", "--limit", "1", "--json")
	if code != 0 || strings.Count(stdout, "\n") != 1 {
		t.Errorf("--limit 1: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, env, "", "sessions", "list", "--limit", "-1"); code != 2 || !strings.Contains(stderr, "--limit") {
		t.Errorf("--limit -1: exit %d: %s", code, stderr)
	}
}

func TestFactsListAndSearch(t *testing.T) {
	url := newStoreURL(t, "a.db")
	seedSessions(t, url)
	fs, err := facts.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	mem := facts.New(fs, facts.Options{})
	ctx := context.Background()
	for _, text := range []string{"prefers answers in French", "uses vim as editor", "prefers answers in French"} {
		if _, err := mem.Remember(ctx, facts.RememberRequest{UserID: "alice", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	fs.Close()
	env := map[string]string{"AGENTMEM_STORE": url}

	code, stdout, stderr := runCLI(t, env, "", "facts", "list", "alice")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The repeated fact is one, seen twice.
	if !regexp.MustCompile(`(?m)^\S+ +0\.\d\d +2x +prefers answers in French$`).MatchString(stdout) ||
		!regexp.MustCompile(`(?m)^\S+ +0\.\d\d +1x +uses vim as editor$`).MatchString(stdout) {
		t.Errorf("facts list alice:\n%s", stdout)
	}

	code, stdout, _ = runCLI(t, env, "", "facts", "search", "alice", "which editor", "--json")
	var hits []facts.Hit
	dec := json.NewDecoder(strings.NewReader(stdout))
	for dec.More() {
		var h facts.Hit
		if err := dec.Decode(&h); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		hits = append(hits, h)
	}
	if code != 0 || len(hits) == 0 || hits[0].Fact.Text != "uses vim as editor" || hits[0].Relevance <= 0 {
		t.Errorf("facts search: exit %d, hits %+v", code, hits)
	}
	if code, _, _ := runCLI(t, env, "", "facts", "list", "nobody"); code != 0 {
		t.Errorf("a user with no facts: exit %d", code)
	}
}
