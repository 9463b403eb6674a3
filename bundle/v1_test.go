package bundle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
)

func TestInputLines(t *testing.T) {
	for _, tc := range []struct {
		err   string
		first int
		want  string
	}{
		{"line 3: agentmem: invalid entry: is not valid UTF-8", 10, "line 12: agentmem: invalid entry: is not valid UTF-8"},
		{"agentmem: invalid line 1: the input is empty", 5, "agentmem: invalid line 5: the input is empty"},
		{"agentmem: invalid entries[2].seq: 1 does not follow 1", 5, "line 8: agentmem: invalid entries[2].seq: 1 does not follow 1"},
		{"entries[x]: odd", 5, "entries[x]: odd"},
		{"line x: odd", 5, "line x: odd"},
		{"line 0: odd", 5, "line 0: odd"},
	} {
		if got := inputLines(errors.New(tc.err), tc.first); got != tc.want {
			t.Errorf("inputLines(%q, %d) = %q, want %q", tc.err, tc.first, got, tc.want)
		}
	}
}

func TestIsExportHeader(t *testing.T) {
	for line, want := range map[string]bool{
		`{"agentmem_export":1,"session":{"id":"s"}}`:                                     true,
		`  { "agentmem_export":1,"session":{`:                                            true, // cut short
		`{"session":{"id":"s"},"agentmem_export":1}`:                                     true,
		`{"seq":1,"kind":"step","step":{"type":"task","task":"agentmem_export"}}`:        false,
		`{"seq":1,"kind":"step","step":{"type":"task","task":"\"agentmem_export\": 1"}}`: false,
		`{"seq":1,"kind":"step","step":{"agentmem_export":1}}`:                           false,
		``:      false,
		`hello`: false,
	} {
		if got := isExportHeader([]byte(line)); got != want {
			t.Errorf("isExportHeader(%q) = %v, want %v", line, got, want)
		}
	}
}

// splitAll returns every chunk of data.
func splitAll(t testing.TB, data []byte, maxLine int) []*exportChunk {
	t.Helper()
	sp := newExportSplitter(bytes.NewReader(data), maxLine)
	var out []*exportChunk
	for {
		c, err := sp.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("split: %v", err)
		}
		out = append(out, c)
	}
}

// fixtureExports returns the exports of the sessions of the version 1
// fixture, by ID.
func fixtureExports(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("testdata/v1/sessions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range splitAll(t, data, 0) {
		out[c.id] = strings.TrimSuffix(string(c.data), "\n") + "\n"
	}
	return out
}

func TestSplitterChunks(t *testing.T) {
	ex := fixtureExports(t)
	in := "\n" + ex["s1"] + "\r\n" + ex["s2"] + "\n\n" + strings.TrimSuffix(ex["s3"], "\n")
	chunks := splitAll(t, []byte(in), 0)
	if len(chunks) != 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i, want := range []struct {
		id              string
		data            string
		first, last     int
		lastSeq, endSeq int64
		entries         int
	}{
		{"s1", ex["s1"], 2, 10, 8, 8, 8},
		{"s2", ex["s2"], 12, 15, 3, 3, 3},
		{"s3", strings.TrimSuffix(ex["s3"], "\n"), 18, 22, 4, 4, 4},
	} {
		c := chunks[i]
		if c.id != want.id || string(c.data) != want.data || c.firstLine != want.first || c.lastLine != want.last ||
			c.lastSeq != want.lastSeq || c.endSeq != want.endSeq || c.entries != want.entries || c.err != nil {
			t.Errorf("chunk %d: id %q lines %d-%d seqs %d/%d entries %d err %v; want %+v", i, c.id, c.firstLine, c.lastLine, c.lastSeq, c.endSeq, c.entries, c.err, want)
		}
	}
}

// FuzzExportSplitter feeds any bytes to the splitter and the import loop
// into a new memstore. The chunks cover every non-blank line of the input
// once, in order, each holding exactly its lines; every session the loop
// reports imported is stored whole (it exports to its chunk), and every
// session it reports failed left nothing in the store.
func FuzzExportSplitter(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/v1/*.jsonl")
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, 0)
	}
	f.Add([]byte("{\"agentmem_export\":1,\"session\":{\"id\":\"x\",\"retention\":\"persistent\",\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\",\"last_seq\":0}}\n"), 64)
	f.Add([]byte("x\n\n{\"agentmem_export\"\n{}"), 8)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		maxLine := 1 << 20
		if limit > 0 {
			maxLine = 16 + limit%4096
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		chunks := splitAll(t, data, maxLine)
		next := 1 // the next line a chunk may start at
		for i, c := range chunks {
			if c.firstLine < next || c.lastLine < c.firstLine || c.lastLine > len(lines) {
				t.Fatalf("chunk %d: lines %d-%d after line %d of %d", i, c.firstLine, c.lastLine, next-1, len(lines))
			}
			for n := next; n < c.firstLine; n++ {
				if len(bytes.TrimSpace(lines[n-1])) != 0 {
					t.Fatalf("chunk %d: line %d (%q) is in no chunk", i, n, lines[n-1])
				}
			}
			if i > 0 && !isExportHeader(lines[c.firstLine-1]) {
				t.Fatalf("chunk %d starts at line %d, not a header: %q", i, c.firstLine, lines[c.firstLine-1])
			}
			if c.err == nil {
				if want := bytes.Join(lines[c.firstLine-1:c.lastLine], nil); !bytes.Equal(c.data, want) {
					t.Fatalf("chunk %d: data %q, want lines %d-%d %q", i, c.data, c.firstLine, c.lastLine, want)
				}
			}
			next = c.lastLine + 1
		}
		for n := next; n <= len(lines); n++ {
			if len(bytes.TrimSpace(lines[n-1])) != 0 {
				t.Fatalf("line %d (%q) is in no chunk", n, lines[n-1])
			}
		}

		ctx := context.Background()
		// A clock at the dawn of time: no imported session has expired.
		dst := memstore.New(memstore.Options{Clock: func() time.Time { return time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC) }})
		im := &v1Importer{st: dst, opts: ImportOptions{OnConflict: ConflictFail, MaxLineBytes: maxLine}}
		imported := map[string]bool{}
		err := im.run(ctx, bytes.NewReader(data), func(r Result) error {
			c := chunks[0]
			chunks = chunks[1:]
			if r.FirstLine != c.firstLine || r.LastLine != c.lastLine || r.SourceID != c.id {
				t.Fatalf("result %+v for chunk at lines %d-%d", r, c.firstLine, c.lastLine)
			}
			switch r.Status {
			case Imported:
				if _, err := dst.Get(ctx, r.Tenant, r.ID); err != nil {
					t.Fatalf("imported %s: %v", r.ID, err)
				}
				imported[r.ID] = true
				var b bytes.Buffer
				if err := store.Export(ctx, dst, r.Tenant, r.ID, &b); err != nil {
					t.Fatal(err)
				}
				// A well-formed chunk exports back to itself, but for
				// JSON spelling (spaces, CRLF, key order, times): check
				// the entry count. (A header the splitter did not take
				// for one, such as {"AgentMem_Export":1,...}, which
				// encoding/json reads case-insensitively, counts as an
				// entry line: the chunk is still imported whole.)
				if got := strings.Count(b.String(), "\n") - 1; c.header && got != c.entries {
					t.Fatalf("imported %s has %d entries, the input %d", r.ID, got, c.entries)
				}
			case Failed:
				if r.Error == "" {
					t.Fatalf("failed without a reason: %+v", r)
				}
				if c.id != "" && !imported[c.id] {
					if _, err := dst.Get(ctx, "", c.id); !errors.Is(err, agentmem.ErrNotFound) && !errors.Is(err, agentmem.ErrInvalid) {
						t.Fatalf("failed session %s is in the store: %v", c.id, err)
					}
				}
			default:
				t.Fatalf("status %q", r.Status)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if len(chunks) != 0 {
			t.Fatalf("%d chunks not reported", len(chunks))
		}
	})
}
