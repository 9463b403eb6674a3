// Package langchaingo plugs agentmem into langchaingo
// (github.com/tmc/langchaingo). It provides a schema.ChatMessageHistory
// over an agentmem session, and a schema.Retriever over agentmem's recall
// search. Both talk to an agentmem server (`agentmem serve`) through the
// Go client, package github.com/agentmem/agentmem/client:
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey(os.Getenv("AGENTMEM_API_KEY")))
//	history, err := langchaingo.NewChatMessageHistory(c, "support-42")
//	buf := memory.NewConversationBuffer(memory.WithChatHistory(history))
//	chain := chains.NewConversation(llm, buf)
//
// # The chat history
//
// Every message is stored when it is added, in one request, as a step of
// the session. agentmem stores it the way it stores any chat:
//
//   - a system message as a system prompt;
//   - a human message as a task;
//   - an AI message as an action (its text and tool calls);
//   - a tool message as the result of the call it answers, in that
//     action.
//
// So the server's context, compaction, recall and inspector see a
// conversation of their own, not opaque records. What a chat message has
// no place for is kept in the step's metadata (the Meta* keys). That is an
// AI message's reasoning content (left out of the contexts the server
// renders), its deprecated function call and its tool calls' types. It is
// also the role and name of a generic message and the name of a function
// message, which are stored as user messages.
//
// Messages returns what was added, each message of the type and with the
// fields it had; a message added by pointer comes back as a value. There
// is one difference, which chat APIs ask for anyway. The tool messages
// that answer an AI message's calls come right after it, in the order of
// its calls, whenever they were added. A tool message must answer a call
// of an AI message added before it. The same result again is a retry and
// stores nothing; a different one is refused (agentmem.ErrConflict).
//
// Messages returns the session's working set, while the session's log
// keeps every message. After a compaction on the server (POST
// /v1/sessions/{id}/compact, a retention policy) it has what the
// compaction kept, and Clear and SetMessages change it too. Steps the
// history did not write (an agent using the HTTP API on the same session)
// come back as the chat messages they render as.
//
// # The retriever
//
// NewRetriever searches the documents of the API key's tenant and the
// conversation turns of its sessions (GET /v1/recall/search). It uses the
// settings of a client.RecallQuery: how many hits, a scope ("session:ID",
// "user:ID", "agent:ID"), neighbouring turns, read-your-writes.
//
// # Depending on the adapter
//
// The adapter is a module of its own, so that agentmem's core module does
// not depend on langchaingo. In this repository its go.mod replaces
// github.com/agentmem/agentmem by the repository's root (../..). So it is
// built and tested against the code beside it. It requires the core at the
// placeholder version v0.0.0-00010101000000-000000000000. A program
// outside the repository requires both modules, the core at the version
// the adapter was released with:
//
//	go get github.com/agentmem/agentmem/adapters/langchaingo@VERSION
//	go get github.com/agentmem/agentmem@VERSION
//
// A replace directive in the dependent module's own go.mod, pointing at a
// checkout, works too; replace directives of dependencies are ignored.
package langchaingo
