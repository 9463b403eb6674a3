// Package client is the Go client of the agentmem server (`agentmem
// serve`, package server). A *Client implements store.Store over the
// server's HTTP JSON API, so a Go service written against a local store
// switches to remote memory by changing one constructor:
//
//	st := memstore.New(memstore.Options{})             // in process
//	st, err := client.New("http://127.0.0.1:8080",     // on a server
//		client.WithAPIKey(os.Getenv("AGENTMEM_API_KEY")))
//
// store.OpenMemory, store.CreateMemory and the rest of package store
// work on a Client as on any store, within what the API can do (see
// "What the API cannot do" below).
//
// # Opening by URL
//
// Importing the package registers the "http" and "https" schemes with
// store.Open, as database/sql drivers register theirs:
//
//	import _ "github.com/agentmem/agentmem/client"
//
//	st, err := store.Open(ctx, "https://memory.example.com?tenant=acme")
//
// The URL is the server's base URL (a path prefix is kept) with optional
// parameters: api_key (else the AGENTMEM_API_KEY environment variable;
// prefer it, URLs end up in logs), tenant (WithTenant) and retries
// (WithRetries). Any other parameter is an error.
//
// # Errors
//
// Input a store would refuse is refused by the client before anything is
// sent, with the store package's own errors. An error the server answers
// is an *Error with the status and the API's code, message and field;
// errors.Is maps it back to the sentinels a local store returns
// (agentmem.ErrNotFound for 404, agentmem.ErrConflict for 409,
// agentmem.ErrInvalid for 400, 413 and 415, ...; see Error), and adds
// ErrUnauthorized (401), ErrForbidden (403) and ErrUnavailable (503 and
// the like, with Error.RetryAfter, and a server that cannot be reached).
// Requests that are safe to repeat are retried on ErrUnavailable, as the
// server's Retry-After says (WithRetries). After Close every method fails
// with store.ErrClosed.
//
// # Beyond store.Store
//
// The server's other routes are methods with typed requests and the
// server's own response types: Context (the messages that fit a budget,
// in OpenAI, Anthropic or observation format), Compact (prune or
// summarize now), AppendMessages (OpenAI chat messages), AppendSteps
// (steps without IDs, with an Idempotency-Key), Fork, the recall index
// (UpsertRecall, SearchRecall, GetRecall, DeleteRecall), user facts
// (Remember, SearchFacts, GetFact, Forget) and Ping (readiness).
//
// # What the API cannot do
//
// A Client passes the store conformance suite (store/storetest) except
// where the HTTP API has no equivalent. Those calls fail with an
// *UnsupportedError (wrapping errors.ErrUnsupported) before anything is
// sent, or behave as documented here:
//
//   - Prune: there is no route; retention is applied by the server.
//   - Tenants: every session is in the API key's tenant. A CreateRequest
//     naming another tenant is refused; a ListRequest filtering by
//     another tenant lists nothing.
//   - Branches (Create with ParentID) are made by the fork route: they
//     get their parent's user and agent (a request for others is
//     refused), and its metadata when the request has none.
//   - TTLs are whole seconds.
//   - Read: step entries have no Entry.Time (the read route does not say
//     when a step was appended), so store.Export of a Client writes files
//     store.Import refuses: export on the server (`agentmem export`). A
//     WorkingSet read fetches the whole log and computes the working set
//     in the client.
//   - An append is one request: at most api.MaxStepsPerRequest steps
//     and the server's body limit (8 MiB by default; 413 beyond it).
//   - A step without a time gets the server's clock when appended (a
//     local store keeps it zero).
//   - Delete of an expired session Prune has not removed yet is
//     agentmem.ErrNotFound (a local store deletes it).
//   - The client does not implement store.Importer, so store.Import needs
//     a local store.
//
// A Client is safe for concurrent use. Its responses are read with a size
// limit (WithMaxResponseBytes). The server answers lists a page at a
// time, and the methods that return everything read every page: long
// logs (Read), a session's items (Items) and a user's facts (SearchFacts
// without a query). The records a list or a search left out as damaged
// go to the context's damage reporter (agentmem.WithDamageReporter), as a
// local store's do.
package client
