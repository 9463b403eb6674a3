package api

// ContextResponse is the body of GET /v1/sessions/{id}/context: the
// messages to send to the model and a record of what was left out.
type ContextResponse struct {
	Format    string `json:"format"`
	Tokenizer string `json:"tokenizer"`
	// Budget is the budget asked for (0: none).
	Budget int `json:"budget"`
	// MaxContextTokens is the server's maximum (Config.MaxContextTokens):
	// without a budget, the context is fitted to it, and Dropped lists
	// the steps that did not fit.
	MaxContextTokens int `json:"max_context_tokens"`
	// Tokens is what the messages cost, reply priming included.
	Tokens int `json:"tokens"`
	// Messages is the request body's messages in the format's wire form
	// (render.Encode): an array of OpenAI chat messages (OpenAIMessage)
	// for "openai" and "observation", an object {"system", "messages"} of
	// Anthropic's Messages API for "anthropic".
	Messages any `json:"messages"`
	// Steps are the sequence numbers of the steps shown, in order.
	Steps []int `json:"steps"`
	// Dropped are the runs of steps of the working set left out.
	Dropped      []DroppedRun `json:"dropped"`
	DroppedSteps int          `json:"dropped_steps"`
	// Truncated are the steps shown with their observations cut.
	Truncated []int `json:"truncated"`
	// NewestTruncated reports that the newest step alone cost more than
	// the budget left after the pinned steps: it is shown with its
	// observations cut to fit (it is in Truncated) rather than dropped
	// (agentmem.Context.NewestTruncated).
	NewestTruncated bool `json:"newest_truncated"`
	// Summarized are the step numbers covered by the summaries shown.
	Summarized []Range `json:"summarized"`
	// Pending are the actions of the working set whose tool calls await
	// results: they are left out of the messages until their results are
	// appended, so every tool call shown has its result.
	Pending []PendingCalls `json:"pending"`
	// LastSeq is the log sequence number the context reflects.
	LastSeq int64 `json:"last_seq"`
	// Facts are the facts about the session's user injected into the
	// system prompt (with facts=K), most relevant first; their tokens are
	// in Tokens.
	Facts []FactView `json:"facts,omitempty"`
	// Recalled are the IDs of the recall documents (turns of other
	// sessions) injected into the system prompt (with recall=K), most
	// relevant first; their tokens are in Tokens.
	Recalled []string `json:"recalled,omitempty"`
	// Blocks are the memory blocks shown after the system prompt (the
	// user's, then the session's), always, pinned; their tokens are in
	// Tokens.
	Blocks []ContextBlock `json:"blocks,omitempty"`
}

// PendingCalls is a pending action of a session: the sequence number of
// its step and the IDs of its tool calls that await results.
type PendingCalls struct {
	Seq         int64    `json:"seq"`
	ToolCallIDs []string `json:"tool_call_ids"`
}

// DroppedRun is a run of consecutive steps of the working set left out of
// a context: the numbers of its first and last steps and how many steps
// it has.
type DroppedRun struct {
	First int `json:"first"`
	Last  int `json:"last"`
	Count int `json:"count"`
}

// Range is a range of step numbers, From to To, both included.
type Range struct {
	From int `json:"from"`
	To   int `json:"to"`
}
