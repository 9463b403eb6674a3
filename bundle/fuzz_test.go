package bundle

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store/memstore"
)

// decodeAll reads a version 2 bundle through the decoder, checking each
// record as the first pass of an import does, and returns it encoded
// again by the writer; ok is false when the decoder or a check refused
// it.
func decodeAll(t *testing.T, im *importer, data []byte, maxLine int) ([]byte, bool) {
	t.Helper()
	d := newDecoder(bytes.NewReader(data), maxLine)
	info, err := d.readHeader()
	if err != nil {
		return nil, false
	}
	var out bytes.Buffer
	w := &writer{w: bufio.NewWriter(&out)}
	if err := w.header(info); err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := d.nextRecord()
		if err != nil {
			if d.line > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("the decoder counts %d lines of an input of at most %d", d.line, bytes.Count(data, []byte("\n"))+1)
			}
			return nil, false
		}
		if rec == nil {
			break
		}
		if rec.firstLine < 2 || rec.lastLine < rec.firstLine || rec.lastLine > d.line {
			t.Fatalf("a record at lines %d-%d after %d lines read", rec.firstLine, rec.lastLine, d.line)
		}
		switch rec.kind {
		case KindSession:
			err = w.session(rec.session)
			for _, e := range rec.entries {
				if err == nil {
					err = w.entry(e)
				}
			}
		case KindBlock:
			err = w.block(rec.block, rec.history)
		case KindFacts:
			err = w.facts(rec.tenant, rec.user, rec.facts, rec.audit)
		case KindDocument:
			err = w.document(rec.doc)
		case kindEnd:
			if rec.end != w.counts {
				t.Fatalf("the end line %+v was taken for a bundle of %+v", rec.end, w.counts)
			}
			continue
		}
		if err != nil {
			t.Fatalf("a decoded %s does not encode: %v", rec.kind, err)
		}
		if im.check(rec) != nil {
			return nil, false
		}
	}
	if err := w.end(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), true
}

// FuzzDecoder feeds any bytes to the decoder of version 2 bundles and to
// the checks of an import's first pass. It never panics; what it reads
// whole, written again, reads back the same and writes the same bytes
// again: nothing is lost or changed between a bundle and its records.
func FuzzDecoder(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.jsonl")
	for _, path := range seeds {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, 0)
	}
	f.Add([]byte(`{"agentmem_export":2,"bundle":{"exported_at":"2026-01-01T00:00:00Z"}}`+"\n"+`{"end":{"sessions":0,"entries":0,"blocks":0,"changes":0,"users":0,"facts":0,"audit":0,"documents":0}}`), 64)
	f.Add([]byte(`{"agentmem_export":2,"bundle":{"exported_at":"2026-01-01T00:00:00Z"}}`+"\r\n"+`{"document":{"id":"d","text":"x","metadata":{},"time":"2026-01-01T01:00:00+01:00","embedding":[1.5,-0]}}`+"\r\n"+`{"end":{"sessions":0,"entries":0,"blocks":0,"changes":0,"users":0,"facts":0,"audit":0,"documents":1}}`+"\n"), 0)
	f.Add([]byte(`{"agentmem_export":2,"bundle":{}}`+"\n"+`{"facts":{"user_id":"u"}}`+"\n"+`{"audit":{"fact_id":"f","action":"forgotten","at":"2026-01-01T00:00:00Z"}}`+"\n"+`{"fact":{}}`), 0)
	f.Add([]byte(`{"agentmem_export":2,"bundle":{}}`+"\n"+`{"facts":{"user_id":"u"}}`+"\n"+`{"audit":{"action":"extracted","at":"2026-01-01T00:00:00Z","session_id":"s","step_seq":2}}`+"\n"+
		`{"audit":{"action":"extracted","at":"2026-01-01T00:00:00Z","session_id":"s","step_seq":2}}`+"\n"+`{"end":{"sessions":0,"entries":0,"blocks":0,"changes":0,"users":1,"facts":0,"audit":2,"documents":0}}`), 0)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		maxLine := 1 << 20
		if limit > 0 {
			maxLine = 16 + limit%4096
		}
		im := &importer{to: Stores{Sessions: memstore.New(memstore.Options{}), Facts: facts.NewMemStore(), Blocks: blocks.NewMemStore(),
			Recall: recall.New(recall.NewMemory(recall.MemoryOptions{}), recall.Options{})}}
		once, ok := decodeAll(t, im, data, maxLine)
		if !ok {
			return
		}
		twice, ok := decodeAll(t, im, once, 1<<30)
		if !ok {
			t.Fatalf("a bundle read whole, written again, is refused:\n%s", once)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("a bundle read and written again changes:\n%s\nthen\n%s", once, twice)
		}
	})
}
