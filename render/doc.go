// Package render adds the chat formats other than OpenAI's, and the wire
// encodings that turn rendered messages into API request bodies.
//
// # Formats
//
// A format (agentmem.Format) renders each step of a memory on its own, and
// Assemble joins the messages of the steps chosen for a context:
//
//   - OpenAI (the core's canonical format, re-exported here): tool calls on
//     assistant messages, each result a "tool" message.
//   - Anthropic: the Messages API. Tool calls become tool_use parts of the
//     assistant message, and the results of one step become tool_result
//     parts of one user message. Assemble moves every system message into
//     one leading system message and merges adjacent same-role messages,
//     so user and assistant strictly alternate.
//   - Observation: tinyAgent's observation-as-user format, for providers
//     without a tool role: the calls are "Action: NAME ARGS" lines of the
//     assistant's text and the results a user message "Observation: ...".
//
// Images outside user messages (a tool's screenshot, an assistant's image)
// are shown where the API takes them. Where it does not, they are
// described in text. A tool result's images stay in Anthropic's
// tool_result block. In OpenAI's format they follow the step's tool
// messages in a user message, and in the observation format they join the
// Observation message. An assistant's images are described in its text in
// every format (agentmem.DescribeImages). Each image shown costs
// agentmem.ImageTokens, as a user's does.
//
// Every merge Assemble makes is a pure concatenation of content parts. So
// the cost of a merged message in agentmem's cost model (MessageTokens) is
// the sum of its parts less one MessageOverhead per merge, and
// agentmem.Context.Tokens stays exact.
//
// # Wire encodings
//
// OpenAIRequest and AnthropicRequest turn a message list into the exact
// JSON shapes of OpenAI's chat-completions and Anthropic's Messages API.
// They leave out agentmem's own fields (IDs, metadata, times). Encode
// picks the right one for a format name, and AppendJSON writes the JSON of
// Encode's value straight from the messages, byte for byte as
// encoding/json does, several times cheaper. DecodeOpenAIMessages is the
// strict inverse for OpenAI-format input, as the HTTP API accepts it.
//
// # Validation
//
// Validate checks a message list against the target API's rules: tool
// calls answered, Anthropic's alternation and tool_result placement, no
// tool role for the observation format. Tests use it everywhere to check
// that rendering is valid by construction.
package render
