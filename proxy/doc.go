// Package proxy gives an existing agent memory with no code change. It
// serves OpenAI's Chat Completions API (POST /v1/chat/completions) and
// Anthropic's Messages API (POST /v1/messages) in front of the real
// provider. It is a transport over the sessions service (package
// sessions).
//
// A request that names a session (the X-Agentmem-Session header) is
// recorded in it. agentmem recognises the messages the session already
// holds and appends only what is new. A client may resend its whole
// history each time, or only its new messages: see the rules in match.go
// and docs/proxy.md. The proxy then sends the provider the session's
// context fitted to a token budget, with every other field of the request
// as it came. The context keeps the system prompt and the first task, tool
// calls with their results, and the newest turns. It holds a truncated
// observation rather than nothing and, on request, the user's facts and
// turns recalled from other sessions.
//
// The answer is relayed as it comes, streamed chunk by chunk or whole,
// with the provider's status and headers. The assistant's reply (text and
// tool calls) is appended to the session when the provider has finished
// it, before the client sees the end of the answer. So the next request's
// tool results find their calls. What the proxy holds of an answer to
// record its reply is bounded (Config.MaxReplyBytes). A larger reply
// reaches the client whole and is recorded cut short, marked so
// (MetaReplyTruncated). The reply step carries a record of the call in its
// metadata (CallOf), which the inspector shows as what the model saw.
//
// A request the proxy refuses changes nothing. The proxy follows no
// redirect of the provider: the request and the provider key go only to
// the configured upstream.
//
// A request without the header passes through untouched and nothing is
// recorded.
package proxy
