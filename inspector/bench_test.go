package inspector_test

import (
	"net/http"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/inspector"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// BenchmarkSessionPage serves the pages of the session of the issue (846
// log entries, 150 of whose tool results are one word of 20,000
// characters) and of the same session with words of 2,000: the first
// page of the timeline (with the chart of context sizes), a later page,
// and what the model saw at the end. The baseline, tokenize-once, counts
// the text of every step of the session once, as a context of the whole
// session without the cache does (what the API's first context request
// of the session costs): the first page costs about that, the chart
// included, and a later page what its own steps' text does.
func BenchmarkSessionPage(b *testing.B) {
	st := memstore.New(memstore.Options{})
	b.Cleanup(func() { st.Close() })
	in, err := inspector.New(inspector.Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		id   string
		word int
	}{{"words-2000", 2_000}, {"words-20000", issueWord}} {
		wordSession(b, st, s.id, issueActions, issueLong, s.word)
		b.Run(s.id+"/tokenize-once", func(b *testing.B) {
			resp, err := st.Read(b.Context(), store.ReadRequest{SessionID: s.id})
			if err != nil {
				b.Fatal(err)
			}
			f, _ := render.ByName(render.NameOpenAI)
			c, _ := tokenizer.Get(tokenizer.O200kBase)
			for b.Loop() {
				for _, e := range resp.Entries {
					for _, m := range f.StepMessages(e.Step, agentmem.RenderOptions{}) {
						agentmem.MessageTokens(c, m)
					}
				}
			}
		})
		for _, p := range []struct{ name, path string }{
			{"first", "/sessions/" + s.id},
			{"later", "/sessions/" + s.id + "?after=200"},
			{"context", "/sessions/" + s.id + "/context"},
		} {
			b.Run(s.id+"/"+p.name, func(b *testing.B) {
				for b.Loop() {
					mustGet(b, in, p.path, http.StatusOK)
				}
			})
		}
	}
}
