package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/examples/internal/scripted"
	"github.com/agentmem/agentmem/llm"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/memstore"
	"github.com/agentmem/agentmem/tokenizer"
)

// Config configures a run: one session per message of the user.
type Config struct {
	// User is the user the sessions belong to, and whose profile block
	// the agent keeps.
	User string
	// Messages are what the user says, one session each.
	Messages []string
	Out      io.Writer
	// LLM, when set, is used instead of the environment or the scripted
	// model.
	LLM *llm.Config
}

// defaultMessages are the three sessions of the example: the user says
// their name, then a preference, then asks something that needs both.
var defaultMessages = []string{
	"Hi! I'm Ann.",
	"By the way, I prefer trains to planes.",
	"What's my name, and how should I get to Lisbon?",
}

const systemPrompt = `You are a helpful travel assistant. You remember the user across conversations only through your memory block "human", shown below: when you learn something lasting about the user (their name, a preference), record it there with your memory tools before you answer, and keep the block short and tidy. Answer from what the block says.`

// Label, Limit and Description are those of the user's profile block.
const (
	Label       = "human"
	Limit       = 500
	Description = "What you know about the user: name, preferences."
)

// maxCalls bounds the model calls of one session.
const maxCalls = 6

// Result is what a run produced.
type Result struct {
	// Answers are the agent's last answer in each session.
	Answers []string
	// Block is the user's profile block at the end, and History its
	// changes.
	Block   blocks.Block
	History []blocks.Change
	// Last is the context of the last session's last call.
	Last *sessions.Context
}

// Run runs the sessions and prints what happens.
func Run(ctx context.Context, cfg Config) error {
	_, err := run(ctx, cfg)
	return err
}

func run(ctx context.Context, cfg Config) (*Result, error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if cfg.User == "" {
		cfg.User = "ann"
	}
	if cfg.Messages == nil {
		cfg.Messages = defaultMessages
	}
	model, err := scripted.Connect(cfg.LLM, script, out)
	if err != nil {
		return nil, err
	}
	defer model.Close()
	counter, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		return nil, err
	}
	// The sessions and the blocks live in memory here; a server keeps
	// both in its store (blocks.Open with the store's URL).
	bm := blocks.New(blocks.NewMemStore(), blocks.Options{})
	svc, err := sessions.New(sessions.Config{Store: memstore.New(memstore.Options{}), Counter: counter, Blocks: bm})
	if err != nil {
		return nil, err
	}
	// The application creates the user's profile block, empty: every
	// context of the user's sessions shows it, and the agent fills it.
	key := blocks.Key{Owner: blocks.User(cfg.User), Label: Label}
	desc := Description
	if _, err := bm.Set(ctx, blocks.SetRequest{Key: key, Limit: Limit, Description: &desc, Edit: blocks.Edit{By: "app"}}); err != nil {
		return nil, err
	}

	res := &Result{}
	for i, msg := range cfg.Messages {
		id := fmt.Sprintf("%s-%d", cfg.User, i+1)
		fmt.Fprintf(out, "\nsession %s\n", id)
		if _, err := svc.Create(ctx, store.CreateRequest{ID: id, UserID: cfg.User, Agent: "profile"}); err != nil {
			return nil, err
		}
		tb := &blocks.Toolbox{Memory: bm, SessionID: id, UserID: cfg.User, By: "profile-agent"}
		answer, last, err := converse(ctx, svc, model.Client, tb, id, msg, out)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
		res.Answers, res.Last = append(res.Answers, answer), last
	}
	if res.Block, err = bm.Get(ctx, key); err != nil {
		return nil, err
	}
	if res.History, err = bm.History(ctx, key); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\nthe block %q of user %s, version %d:\n%s\n", Label, cfg.User, res.Block.Version, res.Block.Value)
	for _, c := range res.History {
		fmt.Fprintf(out, "  v%d %s by %s\n", c.Version, c.Action, c.By)
	}
	return res, nil
}

// converse runs one session: the user's message, then model calls, each
// on the session's context (the blocks included), and the tool calls they
// make, until the model answers without one.
func converse(ctx context.Context, svc *sessions.Service, client *llm.Client, tb *blocks.Toolbox, id, msg string, out io.Writer) (string, *sessions.Context, error) {
	fmt.Fprintln(out, "user:", msg)
	if _, err := svc.AppendMessages(ctx, sessions.MessagesRequest{SessionID: id, Messages: []agentmem.Message{
		{Role: agentmem.RoleSystem, Content: agentmem.Text(systemPrompt)},
		{Role: agentmem.RoleUser, Content: agentmem.Text(msg)},
	}}); err != nil {
		return "", nil, err
	}
	var tools []llm.Tool
	for _, t := range tb.Tools() {
		tools = append(tools, llm.NewTool(t.Name, t.Description, t.Parameters))
	}
	for range maxCalls {
		c, err := svc.Context(ctx, sessions.ContextRequest{SessionID: id, Budget: 4000})
		if err != nil {
			return "", nil, err
		}
		for _, b := range c.Blocks {
			fmt.Fprintf(out, "  [context: %d tokens, block %q v%d, %d/%d chars] %s\n", c.Tokens, b.Label, b.Version, b.Chars(), b.Limit, oneLine(b.Value))
		}
		resp, err := client.Chat(ctx, llm.ChatRequest{Messages: llm.FromAgentmem(c.Messages), Tools: tools})
		if err != nil {
			return "", nil, err
		}
		replies, err := llm.ToAgentmem([]llm.Message{resp.Message})
		if err != nil {
			return "", nil, fmt.Errorf("the model's reply: %w", err)
		}
		reply := replies[0]
		msgs := []agentmem.Message{reply}
		for _, call := range reply.ToolCalls {
			// A refused edit (over the limit, a read-only block, an old
			// text that is not there) goes back to the model, which can
			// correct it.
			result, err := tb.Call(ctx, call.Name, call.Arguments)
			if err != nil {
				result = "error: " + err.Error()
			}
			fmt.Fprintf(out, "  → %s %s = %s\n", call.Name, call.Arguments, result)
			msgs = append(msgs, agentmem.Message{Role: agentmem.RoleTool, ToolCallID: call.ID, Content: agentmem.Text(result)})
		}
		if _, err := svc.AppendMessages(ctx, sessions.MessagesRequest{SessionID: id, Messages: msgs}); err != nil {
			return "", nil, err
		}
		if len(reply.ToolCalls) == 0 {
			fmt.Fprintln(out, "assistant:", reply.Text())
			return reply.Text(), c, nil
		}
	}
	return "", nil, fmt.Errorf("no answer after %d model calls", maxCalls)
}

// oneLine shows a block's value on one line.
func oneLine(s string) string {
	if s == "" {
		return "(empty)"
	}
	return strings.ReplaceAll(s, "\n", " | ")
}
