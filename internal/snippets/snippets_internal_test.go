package snippets

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := "# Title\n\n```sh server\ngo run ./cmd/agentmem serve\n```\n\ntext\n\n" +
		"```sh\ncurl -s localhost:8080/healthz\n```\n\nIt prints:\n\n```json output\n{\"status\":\"ok\"}\n```\n\n" +
		"1. A list:\n\n   ```python\n   print(1)\n\n   print(2)\n   ```\n\n" +
		"````text\n```go\nnot a block\n```\n````\n"
	blocks, err := Parse("doc.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 5 {
		t.Fatalf("%d blocks, want 5: %v", len(blocks), blocks)
	}
	server, curl, out, py, text := blocks[0], blocks[1], blocks[2], blocks[3], blocks[4]
	if server.Line != 3 || server.Lang != "sh" || !server.Has(Server) || server.Text != "go run ./cmd/agentmem serve\n" {
		t.Errorf("server block: %+v", server)
	}
	if curl.Output != out || !out.Has(Output) || out.Text != "{\"status\":\"ok\"}\n" || server.Output != nil {
		t.Errorf("the output block is not the curl block's: %+v", curl)
	}
	if py.Text != "print(1)\n\nprint(2)\n" {
		t.Errorf("an indented block keeps its indentation: %q", py.Text)
	}
	if text.Lang != "text" || text.Text != "```go\nnot a block\n```\n" {
		t.Errorf("a longer fence holds a shorter one: %+v", text)
	}
	if errs := Check(blocks); len(errs) != 0 {
		t.Errorf("Check: %v", errs)
	}

	if _, err := Parse("doc.md", []byte("```sh\nls\n")); err == nil || !strings.Contains(err.Error(), "doc.md:1") {
		t.Errorf("an open fence: %v", err)
	}
}

func TestCheck(t *testing.T) {
	for src, want := range map[string]string{
		"```\nls\n```\n":                                       "names no language",
		"```ts\nconst x = 1;\n```\n":                           "cannot run ts",
		"```sh ilustrative\nls\n```\n":                         "unknown attribute",
		"```json output\n{}\n```\n":                            "must follow the code block",
		"```text\nx\n```\n```text output\nx\n```\n":            "must follow the code block",
		"```sh output\nls\n```\n":                              "only text and json",
		"```python server\nx\n```\n":                           "a server block is a shell block",
		"```go\nfmt.Println(1)\n```\n":                         "complete program",
		"```text illustrative\nx\n```\n":                       "never run",
		"```ts illustrative\nconst x = 1;\n```\n":              "",
		"```go illustrative\nfmt.Println(1)\n```\n":            "",
		"```sh illustrative\nx\n```\n```text output\ny\n```\n": "",
	} {
		blocks, err := Parse("doc.md", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		errs := Check(blocks)
		switch {
		case want == "" && len(errs) > 0:
			t.Errorf("%q: %v", src, errs)
		case want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), want)):
			t.Errorf("%q: %v, want one error saying %q", src, errs, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	got := Normalize(`{"id":"01a21f60-6091-7151-a66b-3cd54568dab6","at":"2026-11-27T23:38:59.601038Z",` +
		`"c":0.7999999998416663,"n":0.8} key am_72e949fc9643_eL7YfpXVjexQhcvAOCMzNmBWCivCHgGTRd_hiuNpREw, ` +
		`id 72e949fc9643 at 2026-11-27 23:42:42Z took 12.5ms`)
	want := `{"id":"<uuid>","at":"<time>","c":0.8000,"n":0.8} key <key>, id <key-id> at <time> took <duration>`
	if got != want {
		t.Errorf("Normalize:\n got %s\nwant %s", got, want)
	}
}

func TestCompare(t *testing.T) {
	jsonBlock := &Block{Lang: "json", Text: "{\"b\": [1, 2],\n \"a\": \"2026-01-01T00:00:00Z\"}\n{\"c\": null}\n"}
	if err := Compare(jsonBlock, `{"a":"2026-11-27T23:38:59Z","b":[1,2]}{"c":null}`); err != nil {
		t.Errorf("the same JSON values, laid out otherwise: %v", err)
	}
	for _, got := range []string{`{"a":"2026-11-27T23:38:59Z","b":[2,1]}{"c":null}`, `{"a":"x","b":[1,2]}{"c":null}`, `{"a":"2026-11-27T23:38:59Z","b":[1,2]}`, `not json`} {
		if err := Compare(jsonBlock, got); err == nil {
			t.Errorf("%s matched %s", got, jsonBlock.Text)
		}
	}

	textBlock := &Block{Lang: "text", Text: "first\n...\nlast\n"}
	for got, match := range map[string]bool{
		"first\nlast\n":            true,
		"first\na\nb\nlast  \n\n":  true,
		"first\na\n":               false,
		"zeroth\nfirst\na\nlast\n": false,
	} {
		if err := Compare(textBlock, got); (err == nil) != match {
			t.Errorf("%q against %q: %v", got, textBlock.Text, err)
		}
	}
}
