package summarize

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/llm"
)

// DefaultPrompt is the system prompt of the LLM summarizer.
const DefaultPrompt = `You maintain the working memory of an autonomous agent. Summarize the agent's progress so that it can continue its task without the original messages.
Keep: the goal and constraints, decisions made and why, facts learned (names, paths, numbers, identifiers exactly as written), what was tried and failed, and what remains to do.
Drop: pleasantries, repeated content, raw tool output that is no longer needed.
Write plain prose or short bullet points, no preamble.`

// ErrEmptySummary is returned when the model answers with no text.
var ErrEmptySummary = errors.New("summarize: the model returned an empty summary")

// LLMOptions configures an LLM summarizer.
type LLMOptions struct {
	// Model overrides the client's default chat model.
	Model string
	// Prompt replaces DefaultPrompt.
	Prompt string
	// MaxInputChars cuts each message of the transcript to this many
	// bytes; 0 means 4,000.
	MaxInputChars int
	// Temperature for the summary call; nil leaves the server's default.
	Temperature *float64
}

// LLM summarizes with a chat model over an OpenAI-compatible API.
type LLM struct {
	client *llm.Client
	opts   LLMOptions
}

// NewLLM returns a summarizer that calls client.
func NewLLM(client *llm.Client, opts LLMOptions) *LLM {
	if opts.Prompt == "" {
		opts.Prompt = DefaultPrompt
	}
	if opts.MaxInputChars == 0 {
		opts.MaxInputChars = 4000
	}
	return &LLM{client: client, opts: opts}
}

// Summarize implements agentmem.Summarizer. It sends the system prompt and
// one user message. The message holds the previous summary (if any), the
// transcript of the steps and the length to aim for. With req.Condense it
// asks for the previous summary to be shortened instead.
func (s *LLM) Summarize(ctx context.Context, req agentmem.SummaryRequest) (string, error) {
	var user strings.Builder
	switch {
	case req.Condense:
		fmt.Fprintf(&user, "Rewrite this summary more concisely, keeping every fact the agent still needs. Stay under %d tokens.\n\n<summary>\n%s\n</summary>", req.MaxTokens, req.Previous)
	default:
		if req.Previous != "" {
			fmt.Fprintf(&user, "The summary so far:\n<summary>\n%s\n</summary>\n\nExtend it with what happened next:\n\n", req.Previous)
		} else {
			user.WriteString("Summarize what happened:\n\n")
		}
		fmt.Fprintf(&user, "<transcript>\n%s\n</transcript>\n\nStay under %d tokens.", Transcript(req.Messages, s.opts.MaxInputChars), req.MaxTokens)
	}
	resp, err := s.client.Chat(ctx, llm.ChatRequest{
		Model:       s.opts.Model,
		Temperature: s.opts.Temperature,
		MaxTokens:   req.MaxTokens + req.MaxTokens/4,
		Messages: []llm.Message{
			{Role: "system", Content: llm.TextContent(s.opts.Prompt)},
			{Role: "user", Content: llm.TextContent(user.String())},
		},
	})
	if err != nil {
		return "", fmt.Errorf("summarize: %w", err)
	}
	text := strings.TrimSpace(resp.Message.Content.String())
	if text == "" {
		return "", ErrEmptySummary
	}
	return text, nil
}
