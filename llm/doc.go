// Package llm is a minimal client for OpenAI-compatible chat-completion
// and embedding APIs. These are OpenAI itself, Ollama, vLLM, the llama.cpp
// server and anything else that speaks the same wire format under a base
// URL.
//
// It is what agentmem uses for summarization, fact extraction, the example
// ReAct agent and embeddings. Of agentmem it imports only the core and
// package render, for the conversions between its Message and theirs
// (FromAgentmem, ToAgentmem, FromOpenAI, Message.OpenAI).
//
// # Usage
//
//	c, err := llm.New(llm.Config{
//		BaseURL: "http://localhost:11434/v1",
//		Model:   "llama3.2",
//	})
//	resp, err := c.Chat(ctx, llm.ChatRequest{
//		Messages: []llm.Message{
//			{Role: "system", Content: llm.TextContent("Be brief.")},
//			{Role: "user", Content: llm.TextContent("Hello")},
//		},
//	})
//	fmt.Println(resp.Message.Content.String())
//
// ConfigFromEnv builds a Config from PREFIX_BASE_URL, PREFIX_API_KEY,
// PREFIX_MODEL and PREFIX_EMBEDDING_MODEL.
//
// # Messages
//
// Message has the OpenAI chat wire shape. Its Content is either plain
// text, sent as a JSON string, or a list of parts (text and image_url),
// sent as a JSON array. An assistant message that only carries ToolCalls
// sends "content": null. Decoding accepts all three forms.
//
// FromAgentmem turns a memory's context (agentmem.Context.Messages) into
// messages for Chat. ToAgentmem turns the model's reply into a message for
// agentmem.Memory.AddMessage. Both go through render.OpenAIMessage,
// OpenAI's wire shape:
//
//	view, _ := mem.Context(ctx, agentmem.ContextOptions{Budget: 8000})
//	resp, _ := c.Chat(ctx, llm.ChatRequest{Messages: llm.FromAgentmem(view.Messages)})
//	reply, _ := llm.ToAgentmem([]llm.Message{resp.Message})
//	mem.AddMessage(ctx, reply[0])
//
// # Errors and retries
//
// A non-2xx response is returned as an *APIError (use errors.As). It holds
// the status code, the provider's error type, code and message, and any
// Retry-After delay. 429 and 5xx responses and transport failures
// (including a per-request timeout) are retried up to Config.MaxRetries
// times with exponential backoff and jitter. A retry waits for Retry-After
// (or OpenAI's retry-after-ms) when the server sends it. Other 4xx
// responses are never retried. A 200 response without choices is
// ErrEmptyResponse; a response that cannot be decoded wraps
// ErrMalformedResponse; an invalid Config wraps ErrConfig. Every call
// honours context cancellation, also while waiting to retry.
//
// A Client is safe for concurrent use.
package llm
