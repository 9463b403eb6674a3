// Package inspector is agentmem's web inspector: server-rendered HTML
// pages that show what a memory holds and what a model was shown, for
// people debugging an agent. The server mounts it at "/", beside the JSON
// API under /v1:
//
//	insp, err := inspector.New(inspector.Config{Store: st, Tenant: tenantOf})
//	...
//	mux.Handle("/", insp)
//
// A server with routes of its own can instead register it under each of
// Patterns, so that its other unknown paths stay its own 404s.
//
// # Pages
//
//	/                              sessions, filtered by user, agent and parent, paged
//	/sessions/{id}                 the session's log: steps with a token bar each,
//	                               the tool results that arrived after a call in
//	                               its row, compactions as markers, a branch's
//	                               inherited entries marked; its branches,
//	                               and the memory blocks its contexts show
//	/sessions/{id}/context?at=N    exactly what the model saw at the call that
//	                               produced step N (no at: the next call), under
//	                               a budget, format and tokenizer given as query
//	                               parameters, so every view is a shareable URL
//	/facts?user=U                  a user's facts: their decaying confidence,
//	                               when each held, what superseded it
//	/facts/history?user=U&id=ID    a fact's supersession chain and changes
//	/blocks?user=U, ?session=S     an owner's memory blocks; with &label=L,
//	                               the block and its versions, each change a
//	                               diff with who made it and when
//	/recall?q=Q&k=K                recall search
//
// The "what the model saw" page rebuilds the memory from the log as it
// stood before step N, with store.WorkingSet. Compactions are honoured as
// a bound memory loads them. It renders the memory with
// agentmem.Memory.Context: the messages and their token counts. Every step
// of the log up to that point is marked as shown, truncated, summarized or
// pruned, as the context result reports them. The page leaves out the
// memory blocks, which it could show only as they are now. It says so, and
// links to their versions.
//
// Every page is bounded by what it shows, not by what the session holds.
// Long logs are paged: the timeline by Config.TimelinePage entries, what
// the model saw by ContextPage messages and ContextLogPage log entries. A
// message shows at most MaxShownText bytes and a word MaxShownWord, cut
// before anything else is done with them. A page tokenizes each text once.
//
// Facts, recall and memory blocks come from the small FactsSource,
// RecallSource and BlocksSource interfaces of this package. FactsFrom and
// RecallFrom adapt the facts memory and the recall index to them, and a
// *blocks.Memory is a BlocksSource. A page whose source is not configured
// says so.
//
// # Safety
//
// Every page reads the tenant from Config.Tenant and shows only that
// tenant's data: another tenant's session is a 404, like a missing one.
// Templates are html/template, so everything shown is escaped. The pages
// use no JavaScript, no inline styles and nothing from another origin.
// Every response carries a Content-Security-Policy that allows only the
// inspector's own stylesheet.
package inspector
