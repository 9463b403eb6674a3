// Package client is the Go client of the agentmem server (`agentmem
// serve`, package server): a method per route of its HTTP JSON API, with
// the wire types of package api. It imports nothing of agentmem's domain
// (no store, no tokenizer, no SQL driver). A program that only talks to a
// server thus links the client, the wire types and the standard library.
//
//	c, err := client.New("http://127.0.0.1:8080",
//		client.WithAPIKey(os.Getenv("AGENTMEM_API_KEY")))
//	sess, err := c.CreateSession(ctx, api.CreateSessionRequest{UserID: "ann"})
//	_, err = c.AppendMessages(ctx, sess.ID, []api.OpenAIMessage{
//		{Role: "user", Content: "Why does the login test fail?"},
//	}, client.AppendOptions{})
//	view, err := c.Context(ctx, sess.ID, client.ContextOptions{Budget: 8000})
//
// The routes cover sessions (CreateSession, GetSession, ListSessions,
// DeleteSession, Fork), their logs (AppendSteps, AppendWithCompaction,
// ReadSteps, ReadLog), chat messages (AppendMessages, Pop) and the
// context that fits a budget (Context). They also cover compaction
// (Compact), the Responses-API items of the OpenAI Agents SDK
// (AppendItems, Items, PopItem, ClearItems) and the recall index
// (UpsertRecall, SearchRecall, GetRecall, DeleteRecall). Then come user
// facts (Remember, ExtractFacts, SearchFacts, GetFact, UpdateFact,
// FactHistory, Forget), memory blocks (Blocks, Block, PutBlock,
// AppendBlock, ReplaceBlock, DeleteBlock, BlockHistory), erasing a user
// (ForgetUser) and readiness (Ping).
//
// Steps travel in the core's typed step JSON, as json.RawMessage (see
// api.StepHeader): encode typed steps with agentmem.MarshalStep.
//
// # Remote memory
//
// Package client/remote adapts a Client to store.Store, so that a Go
// service written against a local store moves to a server by changing
// one constructor, and registers the "http" and "https" schemes with
// store.Open. It imports the domain; this package does not.
//
// # Errors
//
// An error the server answers is an *Error with the status and the API's
// code, message and field. errors.Is maps it to the package's sentinels,
// such as ErrNotFound for 404, ErrConflict for 409, and ErrInvalid for
// 400, 413 and 415 (see Error). A server that cannot be reached, and 429, 502,
// 503 and 504, are ErrUnavailable, with Error.RetryAfter when the server
// said. Requests that are safe to repeat are retried on ErrUnavailable,
// as the server's Retry-After says (WithRetries). After Close every
// method fails with ErrClosed.
//
// A Client is safe for concurrent use. Its responses are read with a size
// limit (WithMaxResponseBytes). The server answers lists a page at a
// time: ListSessions and ReadSteps return one page, and the methods that
// return everything read every page: ReadLog, Items and SearchFacts
// without a query. The records a search left out as damaged go to the
// damage handler (WithDamageHandler).
package client
