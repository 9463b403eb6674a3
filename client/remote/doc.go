// Package remote is a remote memory: a store.Store over the Go client of
// the agentmem server (package client). A Go service written against a
// local store moves to a shared server by changing one constructor:
//
//	st := memstore.New(memstore.Options{})             // in process
//	c, err := client.New("http://127.0.0.1:8080",      // on a server
//		client.WithAPIKey(os.Getenv("AGENTMEM_API_KEY")))
//	st := remote.New(c)
//
// New returns the portable store.Store over the client, whose driver is
// this package's Store. store.OpenMemory, store.CreateMemory and the rest
// of package store work on it as on any store. The API limits what they
// can do (see "What the API cannot do" below). The driver (NewDriver, or
// store.Store.As) has more: Store.Client reaches the server's other
// routes (context, compaction, recall, facts, ...), and AppendMessages
// and AppendSteps take agentmem's messages and typed steps.
//
// Package client imports nothing of agentmem's domain; this package
// converts between the API's wire types and the domain's, and classifies
// the client's errors by the store's sentinels (Store.ClassifyError, which
// store.Store asks, and MapError for the rest).
//
// # Opening by URL
//
// Importing the package registers the "http" and "https" schemes with
// store.Open, as database/sql drivers register theirs:
//
//	import _ "github.com/agentmem/agentmem/client/remote"
//
//	st, err := store.Open(ctx, "https://memory.example.com?tenant=acme")
//
// The URL is the server's base URL (a path prefix is kept) with optional
// parameters: api_key, tenant (WithTenant) and retries
// (client.WithRetries). Any other parameter is an error. Without api_key
// the AGENTMEM_API_KEY environment variable is used; prefer it, as URLs
// end up in logs.
//
// # Errors
//
// Input a store would refuse is refused before anything is sent, with
// the store package's own errors. An error the server answers is a
// *client.Error that errors.Is maps to the sentinels a local store
// returns (agentmem.ErrNotFound for 404, agentmem.ErrConflict for 409,
// agentmem.ErrInvalid for 400, 413 and 415, ...; see MapError). After
// Close every method fails with store.ErrClosed.
//
// # What the API cannot do
//
// A Store passes the store conformance suite (store/storetest) except
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
//     when a step was appended), so store.Export of a Store writes files
//     store.Import refuses: export on the server (`agentmem export`). A
//     WorkingSet read fetches the whole log and computes the working set
//     in the client.
//   - An append is one request: at most api.MaxStepsPerRequest steps
//     and the server's body limit (8 MiB by default; 413 beyond it).
//   - A step without a time gets the server's clock when appended (a
//     local store keeps it zero).
//   - Delete of an expired session Prune has not removed yet is
//     agentmem.ErrNotFound (a local store deletes it).
//   - A Store does not implement store.Importer, so store.Import needs a
//     local store.
//
// A Store is safe for concurrent use. The sessions a List leaves out as
// damaged go to the context's damage reporter (agentmem.WithDamageReporter),
// as a local store's do; ReportDamaged does the same for the client's
// searches.
package remote
