package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
)

// Bounds of the session tools' arguments.
const (
	// MaxMessages bounds the messages of one append.
	MaxMessages = 1000
	// MaxInject bounds get_context's facts and recall.
	MaxInject = 50
	// MaxBudget bounds get_context's budget.
	MaxBudget = 10_000_000
	// DefaultMaxContextTokens is Config.MaxContextTokens when it is 0. A
	// get_context without a budget is fitted to it, so that a long session
	// is never rendered whole. It is the largest context window of current
	// models, as the HTTP API's default.
	DefaultMaxContextTokens = sessions.DefaultMaxContextTokens
	// MaxPageSize bounds list_sessions' page_size.
	MaxPageSize = 200
	// DefaultPageSize is list_sessions' page size when none is given.
	DefaultPageSize = 20
	// maxTTLSeconds bounds create_session's ttl_seconds (a hundred years).
	maxTTLSeconds = 100 * 365 * 24 * 3600
	// maxIdempotencyKey leaves room for "/index" within store.MaxIDLen.
	maxIdempotencyKey = 100
)

// SessionInfo is a session as the tools show it.
type SessionInfo struct {
	ID        string            `json:"id" jsonschema:"the session ID, to pass as session_id to append and get_context"`
	UserID    string            `json:"user_id,omitempty" jsonschema:"the user the session belongs to"`
	Agent     string            `json:"agent,omitempty" jsonschema:"the agent whose run the session records"`
	Metadata  map[string]string `json:"metadata,omitempty" jsonschema:"free-form labels"`
	Retention string            `json:"retention" jsonschema:"how long the session lives: session (until deleted or expired), persistent (until deleted) or single_run"`
	ParentID  string            `json:"parent_id,omitempty" jsonschema:"the session this one was forked from"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty" jsonschema:"when the session expires; absent: never"`
	LastSeq   int64             `json:"last_seq" jsonschema:"the sequence number of the newest entry of the session's log (0: empty)"`
	// Pinning and AutoCompact are the session's settings.
	Pinning     *agentmem.Pinning  `json:"pinning,omitempty" jsonschema:"what get_context always shows, whatever the budget"`
	AutoCompact *store.AutoCompact `json:"auto_compact,omitempty" jsonschema:"when the server compacts the session by itself; absent: never"`
	// ExtractFacts is the session's fact extraction switch, as given.
	ExtractFacts *bool `json:"extract_facts,omitempty" jsonschema:"whether the server learns facts about the session's user from its turns by itself: true or false as the session was created; absent: the server's default"`
}

// sessionInfo converts a store session.
func sessionInfo(s *store.Session) SessionInfo {
	out := SessionInfo{
		ID: s.ID, UserID: s.UserID, Agent: s.Agent, Metadata: s.Metadata, Retention: string(s.Retention),
		ParentID: s.ParentID, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, LastSeq: s.LastSeq,
		Pinning: s.Pinning, AutoCompact: s.AutoCompact, ExtractFacts: s.ExtractFacts,
	}
	if !s.ExpiresAt.IsZero() {
		e := s.ExpiresAt
		out.ExpiresAt = &e
	}
	return out
}

// create_session

// CreateSessionInput is the input of create_session.
type CreateSessionInput struct {
	ID         string            `json:"id,omitempty" jsonschema:"the new session's ID; leave it out to get a new unique one. 1 to 128 characters from A-Z a-z 0-9 . _ : - starting with a letter or digit"`
	UserID     string            `json:"user_id,omitempty" jsonschema:"the user the conversation is with, so sessions can be listed per user"`
	Agent      string            `json:"agent,omitempty" jsonschema:"the agent (assistant, bot, sub-agent) whose conversation this is"`
	Metadata   map[string]string `json:"metadata,omitempty" jsonschema:"free-form string labels, such as a project or a topic"`
	Retention  string            `json:"retention,omitempty" jsonschema:"session: kept until deleted or until ttl_seconds pass (the default); persistent: kept until deleted"`
	TTLSeconds int64             `json:"ttl_seconds,omitempty" jsonschema:"delete the session this many seconds after creation (retention session only); 0 or absent: never"`
	// Pinning and AutoCompact are the session's settings, fixed at its
	// creation.
	Pinning     *agentmem.Pinning  `json:"pinning,omitempty" jsonschema:"what get_context always shows, whatever the budget: members left out are false; absent: system_prompts, first_task and summary. A chat usually wants system_prompts and summary"`
	AutoCompact *store.AutoCompact `json:"auto_compact,omitempty" jsonschema:"have the server summarize the oldest turns by itself when the session's messages pass max_tokens; absent: never"`
	// ExtractFacts opts the session in to or out of the server's fact
	// extraction.
	ExtractFacts *bool `json:"extract_facts,omitempty" jsonschema:"true: the server learns facts about user_id from the session's turns by itself (needs user_id, and a server with a model for it); false: it does not; absent: the server's default"`
}

var createSessionSchema = []edit{
	at("id", sessionIDEdits...),
	at("retention", enum(string(store.SessionRetention), string(store.Persistent)), byDefault(string(store.SessionRetention))),
	at("ttl_seconds", between(0, maxTTLSeconds)),
	at("user_id", length(0, store.MaxFieldBytes)),
	at("agent", length(0, store.MaxFieldBytes)),
	at("metadata", maxProperties(store.MaxMetadataKeys)),
	at("pinning", object, optional),
	at("pinning.system_prompts", describe("always show every system prompt")),
	at("pinning.first_task", describe("always show the first task: the first user message")),
	at("pinning.tasks", describe("always show every task (user message)")),
	at("pinning.summary", describe("always show the newest summary of older messages")),
	at("auto_compact", object),
	at("auto_compact.max_tokens", between(1, store.MaxAutoCompactTokens), describe("compact when the session's messages cost more than this many tokens")),
	at("auto_compact.target_tokens", atLeast(0), describe("compact down to this many tokens, below max_tokens; 0 or absent: half of max_tokens")),
	at("auto_compact.keep_recent", between(0, store.MaxAutoCompactKeepRecent), describe("the newest messages kept as they are; 0 or absent: 6")),
	at("auto_compact.summarizer", enum(store.SummarizerExtractive, store.SummarizerLLM),
		describe("who writes the summary: extractive (sentences of the messages) or llm (the server's model); absent: llm when the server has one")),
}

const createSessionDescription = `Create a new session: a durable conversation log that append writes to and get_context reads from. Create one per conversation or agent run, and keep its id. Returns the session, with its id.`

func (t *tools) createSession(ctx context.Context, in CreateSessionInput) (SessionInfo, error) {
	const op = "create_session"
	r := store.Retention(in.Retention)
	if r == store.Persistent && in.TTLSeconds > 0 {
		return SessionInfo{}, t.toolError(ctx, op, invalid("ttl_seconds", "a persistent session never expires: leave ttl_seconds out or use retention session"))
	}
	req := store.CreateRequest{
		ID: in.ID, Tenant: t.tenant, UserID: in.UserID, Agent: in.Agent, Metadata: in.Metadata,
		Retention: r, TTL: time.Duration(in.TTLSeconds) * time.Second,
		Pinning: in.Pinning, AutoCompact: in.AutoCompact, ExtractFacts: in.ExtractFacts,
	}
	if err := store.ValidateCreate(req); err != nil {
		return SessionInfo{}, t.toolError(ctx, op, err)
	}
	s, err := t.cfg.Sessions.Create(ctx, req)
	if err != nil {
		return SessionInfo{}, t.toolError(ctx, op, err)
	}
	return sessionInfo(s), nil
}

// list_sessions

// ListSessionsInput is the input of list_sessions.
type ListSessionsInput struct {
	UserID    string `json:"user_id,omitempty" jsonschema:"only the sessions of this user"`
	Agent     string `json:"agent,omitempty" jsonschema:"only the sessions of this agent"`
	PageSize  int    `json:"page_size,omitempty" jsonschema:"the most sessions to return"`
	PageToken string `json:"page_token,omitempty" jsonschema:"next_page_token of the previous call, to get the next page"`
}

// ListSessionsOutput is the output of list_sessions.
type ListSessionsOutput struct {
	Sessions []SessionInfo `json:"sessions" jsonschema:"the sessions, newest first"`
	// Damaged are the sessions of the page whose stored record does not
	// decode, left out of Sessions (store.ListResponse.Damaged).
	Damaged []DamagedSession `json:"damaged,omitempty" jsonschema:"sessions of this page whose stored record is damaged (does not decode): left out of sessions; reading one fails"`
	// NextPageToken is empty on the last page.
	NextPageToken string `json:"next_page_token,omitempty" jsonschema:"pass it as page_token to get more; absent on the last page"`
}

// DamagedSession is a session list_sessions left out because its stored
// record does not decode.
type DamagedSession struct {
	ID    string `json:"id" jsonschema:"the session's ID"`
	Error string `json:"error" jsonschema:"why its record does not decode"`
}

var listSessionsSchema = []edit{
	at("page_size", between(1, MaxPageSize), byDefault(DefaultPageSize)),
	at("page_token", length(0, 1024)),
}

const listSessionsDescription = `List sessions, newest first, optionally only those of one user or one agent. Use it to find a session to continue. Returns at most page_size sessions (fewer when they would pass 32 KiB) and, if there are more, a next_page_token.`

func (t *tools) listSessions(ctx context.Context, in ListSessionsInput) (ListSessionsOutput, error) {
	const op = "list_sessions"
	if in.PageSize == 0 {
		in.PageSize = DefaultPageSize
	}
	out := ListSessionsOutput{Sessions: []SessionInfo{}}
	resp, err := t.cfg.Sessions.List(ctx, store.ListRequest{Tenant: t.tenant, UserID: in.UserID, Agent: in.Agent, PageSize: in.PageSize, PageToken: in.PageToken})
	if err != nil {
		return ListSessionsOutput{}, t.toolError(ctx, op, err)
	}
	for _, s := range resp.Sessions {
		out.Sessions = append(out.Sessions, sessionInfo(s))
	}
	for _, d := range resp.Damaged {
		out.Damaged = append(out.Damaged, DamagedSession{ID: d.ID, Error: d.Err.Error()})
	}
	out.NextPageToken = resp.NextPageToken
	if n := fitting(out.Sessions); n < len(out.Sessions) {
		// The next page starts after the last session shown, as the
		// store's own token would (a damaged session after it may be
		// named again there).
		last := resp.Sessions[n-1]
		out.Sessions = out.Sessions[:n]
		out.NextPageToken = store.EncodePageToken(store.Cursor{CreatedAt: last.CreatedAt, ID: last.ID, Tenant: last.Tenant})
	}
	return out, nil
}

// append

// Message is a chat message in OpenAI's shape: the input of append.
type Message struct {
	Role       string     `json:"role" jsonschema:"system (instructions), user, assistant (the model's reply; may call tools) or tool (the result of one tool call)"`
	Content    string     `json:"content,omitempty" jsonschema:"the message's text; for a tool message, the tool's output"`
	Name       string     `json:"name,omitempty" jsonschema:"the speaker's name, if the API uses one"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty" jsonschema:"assistant messages only: the tool calls the model made. Each call's result is a tool message with its id, in this append or a later one"`
	ToolCallID string     `json:"tool_call_id,omitempty" jsonschema:"tool messages only: the id of the tool call this is the result of"`
	IsError    bool       `json:"is_error,omitempty" jsonschema:"tool messages only: the tool failed and content is its error"`
	// Images are the message's images, after its text: a user's, an
	// assistant's (kept on its action) or a tool's (kept with its
	// result, agentmem.ToolResult.Images).
	Images []Image `json:"images,omitempty" jsonschema:"images the message holds, after its text: a user's, an assistant's, or a tool's output (a screenshot). Not in system messages"`
	// Metadata is kept with the step the message starts or, for a tool
	// message, with its result (agentmem.ToolResult.Metadata).
	Metadata map[string]string `json:"metadata,omitempty" jsonschema:"free-form labels kept with the message (a tool message's with its result) and returned by pop; not shown to the model"`
}

// Image is an image of a message, given by URL.
type Image struct {
	URL    string `json:"url" jsonschema:"an http(s) URL, or a data: URL holding the image (data:image/png;base64,...)"`
	Detail string `json:"detail,omitempty" jsonschema:"OpenAI's detail level: low, high or auto"`
}

// ToolCall is a tool call of an assistant message.
type ToolCall struct {
	ID        string `json:"id" jsonschema:"the call's ID, unique in the session; the tool message with the result repeats it"`
	Name      string `json:"name" jsonschema:"the tool's name"`
	Arguments string `json:"arguments,omitempty" jsonschema:"the arguments as JSON text, exactly as the model wrote them, e.g. {\"path\": \"main.go\"}"`
}

// AppendInput is the input of append.
type AppendInput struct {
	SessionID      string    `json:"session_id" jsonschema:"the session to append to (from create_session or list_sessions)"`
	Messages       []Message `json:"messages" jsonschema:"the messages to append, oldest first: a whole turn (such as an assistant message with tool calls and one tool message per call) or a single message"`
	FlushPending   bool      `json:"flush_pending,omitempty" jsonschema:"record every tool call still without a result after this append, of this append or earlier ones, as failed, instead of keeping it pending"`
	IdempotencyKey string    `json:"idempotency_key,omitempty" jsonschema:"a key unique to this append: a retry with the same key and messages stores nothing twice; the same key with other messages is refused and stores nothing"`
}

// AppendOutput is the output of append.
type AppendOutput struct {
	Seqs    []int64 `json:"seqs" jsonschema:"the log sequence numbers of the stored steps, in order"`
	LastSeq int64   `json:"last_seq" jsonschema:"the session's last sequence number after the append"`
	Updated []int64 `json:"updated,omitempty" jsonschema:"the sequence numbers of earlier assistant messages whose pending tool calls this append's tool messages answered"`
}

var appendSchema = []edit{
	at("session_id", sessionIDEdits...),
	at("messages", array, items(1, MaxMessages)),
	at("messages.[].tool_calls", array),
	at("messages.[].role", enum(string(agentmem.RoleSystem), string(agentmem.RoleUser), string(agentmem.RoleAssistant), string(agentmem.RoleTool))),
	at("messages.[].tool_calls.[].id", length(1, 256)),
	at("messages.[].tool_calls.[].name", length(1, 256)),
	at("messages.[].metadata", maxProperties(store.MaxMetadataKeys)),
	at("messages.[].images.[].url", pattern(`^(?i)(https?|data):`)),
	at("messages.[].images.[].detail", enum("low", "high", "auto")),
	at("idempotency_key", length(1, maxIdempotencyKey), pattern(`^[!-~]+$`)),
}

const appendDescription = `Append messages to a session's log, in OpenAI's chat shape: role system, user, assistant or tool. An assistant message may carry tool_calls; their results are tool messages (tool_call_id = the call's id), in the same append or in later ones: a call without its result yet is kept pending, and get_context leaves it out (and lists it under pending) until the result is appended. A tool message that repeats its call's result stores nothing; one whose call was never made, or whose call already has a different result, is refused. User, assistant and tool messages may carry images (http(s) or data: URLs): a tool's (a screenshot) is kept with its result and shown to the model where the format's API takes it, described in text where it does not. Messages are stored durably and atomically (all or none). Returns the new log sequence numbers.`

func (t *tools) append(ctx context.Context, in AppendInput) (AppendOutput, error) {
	op := "append to session " + strconv.Quote(in.SessionID)
	if err := store.ValidateID(in.SessionID); err != nil {
		return AppendOutput{}, t.toolError(ctx, op, badSessionID(in.SessionID))
	}
	msgs, err := chatMessages(in.Messages)
	if err != nil {
		return AppendOutput{}, t.toolError(ctx, op, err)
	}
	resp, err := t.cfg.Sessions.AppendMessages(ctx, sessions.MessagesRequest{
		SessionID: in.SessionID, Tenant: t.tenant, Messages: msgs, Flush: in.FlushPending, IdempotencyKey: in.IdempotencyKey, NewID: t.cfg.NewID, Now: t.cfg.Clock,
	})
	if errors.Is(err, agentmem.ErrNotFound) {
		err = sessionNotFound(in.SessionID)
	}
	var re *store.IDReusedError
	if errors.As(err, &re) {
		return AppendOutput{}, fmt.Errorf("%s: idempotency_key %q was already used for a different append (%s): nothing was stored; a retry must send the same messages, a new append needs a new key",
			op, in.IdempotencyKey, re.What())
	}
	var ce *agentmem.ResultConflictError
	if errors.As(err, &ce) {
		return AppendOutput{}, fmt.Errorf("%s: %s: tool call %q already has a different result: nothing was stored (the same result again is fine; to replace the newest message, pop it first)", op, ce.Field, ce.CallID)
	}
	if err != nil {
		return AppendOutput{}, t.toolError(ctx, op, err)
	}
	return AppendOutput{Seqs: resp.Seqs, LastSeq: resp.LastSeq, Updated: resp.Updated}, nil
}

// chatMessages converts the messages of an append; sessions.Service.AppendMessages
// folds them into steps (agentmem.FoldMessages), as on the HTTP API.
func chatMessages(in []Message) ([]agentmem.Message, error) {
	if len(in) == 0 {
		return nil, invalid("messages", "is empty: send at least one message")
	}
	if len(in) > MaxMessages {
		return nil, invalid("messages", "has %d messages; at most %d per append", len(in), MaxMessages)
	}
	out := make([]agentmem.Message, len(in))
	for i, m := range in {
		field := fmt.Sprintf("messages[%d]", i)
		msg := agentmem.Message{Role: agentmem.Role(m.Role), Name: m.Name, ToolCallID: m.ToolCallID}
		if m.Content != "" {
			msg.Content = agentmem.Text(m.Content)
		}
		for j, img := range m.Images {
			f := fmt.Sprintf("%s.images[%d]", field, j)
			lower := strings.ToLower(img.URL)
			if !strings.HasPrefix(lower, "https://") && !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "data:") {
				return nil, invalid(f+".url", "must be an http(s) or data: URL")
			}
			switch img.Detail {
			case "", "low", "high", "auto":
			default:
				return nil, invalid(f+".detail", "must be low, high or auto, not %q", img.Detail)
			}
			msg.Content = append(msg.Content, agentmem.ImagePart(agentmem.Image{URL: img.URL, Detail: img.Detail}))
		}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, agentmem.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		if err := checkMetadata(field+".metadata", m.Metadata); err != nil {
			return nil, err
		}
		msg.Metadata = maps.Clone(m.Metadata)
		if m.IsError {
			if msg.Role != agentmem.RoleTool {
				return nil, invalid(field+".is_error", "only a tool message can be an error result")
			}
			if msg.Metadata == nil {
				msg.Metadata = map[string]string{}
			}
			msg.Metadata[agentmem.MetaIsError] = "true"
		}
		out[i] = msg
	}
	return out, nil
}

// checkMetadata checks a message's metadata as a session's is checked:
// at most store.MaxMetadataKeys entries, keys of 1 to store.MaxFieldBytes
// bytes and values of at most that many, without NUL.
func checkMetadata(field string, md map[string]string) error {
	if len(md) > store.MaxMetadataKeys {
		return invalid(field, "has %d keys (at most %d)", len(md), store.MaxMetadataKeys)
	}
	for k, v := range md {
		if k == "" || len(k) > store.MaxFieldBytes || strings.IndexByte(k, 0) >= 0 {
			return invalid(field, "has a key that is not 1 to %d bytes without NUL", store.MaxFieldBytes)
		}
		if len(v) > store.MaxFieldBytes || strings.IndexByte(v, 0) >= 0 {
			return invalid(field+"["+k+"]", "must be at most %d bytes, without NUL", store.MaxFieldBytes)
		}
	}
	return nil
}

// get_context

// GetContextInput is the input of get_context.
type GetContextInput struct {
	SessionID      string `json:"session_id" jsonschema:"the session to render"`
	Budget         int    `json:"budget,omitempty" jsonschema:"the most tokens the messages may cost; the newest messages that fit are kept, with the system prompt and the first task always kept. 0 or absent: 8000 tokens unless the server is configured otherwise (more if the pinned messages need it); ask for more, up to the server's maximum context (1,000,000 tokens unless configured), to see more of a long session"`
	Format         string `json:"format,omitempty" jsonschema:"the chat API shape of the messages: openai (tool role), anthropic (system apart, tool_use/tool_result blocks) or observation (tool results as user messages)"`
	Tokenizer      string `json:"tokenizer,omitempty" jsonschema:"how tokens are counted: o200k_base (GPT-4o and later), cl100k_base (GPT-4) or heuristic (characters/4, for other models); absent: the server's default"`
	TruncateToFill bool   `json:"truncate_to_fill,omitempty" jsonschema:"show the newest step that does not fit with its tool outputs cut, to fill the budget"`
	Facts          int    `json:"facts,omitempty" jsonschema:"add up to this many of the session user's facts, the most relevant to the newest question, to the system prompt, within a tenth of the budget (the conversation gets the rest); the session needs a user_id"`
	Recall         int    `json:"recall,omitempty" jsonschema:"add up to this many turns of the user's other sessions (the tenant's, for a session without a user), the most relevant to the newest question, to the system prompt, within another tenth of the budget"`
}

// ContextOutput is the output of get_context: the messages to send to the
// model and a record of what was left out.
type ContextOutput struct {
	Format    string `json:"format"`
	Tokenizer string `json:"tokenizer"`
	Budget    int    `json:"budget" jsonschema:"the budget the messages were fitted to: the one asked for, or the default when the call gave none"`
	Tokens    int    `json:"tokens" jsonschema:"what the messages cost, counted with tokenizer, request overhead included"`
	Messages  any    `json:"messages" jsonschema:"the messages in the format's wire shape: an array of chat messages for openai and observation, an object {system, messages} for anthropic"`
	Steps     []int  `json:"steps" jsonschema:"the log sequence numbers of the steps shown, in order"`
	// Dropped are the runs of steps of the working set left out.
	Dropped         []agentmem.DroppedRun `json:"dropped" jsonschema:"runs of steps left out to fit the budget"`
	DroppedSteps    int                   `json:"dropped_steps" jsonschema:"how many steps were left out"`
	Truncated       []int                 `json:"truncated" jsonschema:"steps shown with their tool outputs cut"`
	NewestTruncated bool                  `json:"newest_truncated" jsonschema:"true when the newest step alone was larger than the budget left: it is shown with its tool output cut to fit (it is in truncated) rather than left out"`
	Summarized      []agentmem.Range      `json:"summarized" jsonschema:"the steps the summaries shown stand for"`
	Pending         []PendingCalls        `json:"pending" jsonschema:"assistant messages whose tool calls await results: left out of messages until the results are appended"`
	LastSeq         int64                 `json:"last_seq" jsonschema:"the log sequence number the context reflects"`
	Facts           []string              `json:"facts,omitempty" jsonschema:"the IDs of the facts added to the system prompt, when facts were asked for"`
	Recalled        []string              `json:"recalled,omitempty" jsonschema:"the IDs of the recalled turns added to the system prompt, when recall was asked for"`
	// Note says what the budget left out and how to see it.
	Note string `json:"note,omitempty" jsonschema:"what was left out to fit the budget, and how to see more"`
}

// PendingCalls is an assistant message whose tool calls await results.
type PendingCalls struct {
	Seq         int64    `json:"seq" jsonschema:"the log sequence number of the assistant message's step"`
	ToolCallIDs []string `json:"tool_call_ids" jsonschema:"the IDs of its tool calls that have no result yet"`
}

var getContextSchema = []edit{
	at("session_id", sessionIDEdits...),
	at("budget", between(0, MaxBudget)), // and at most Config.MaxContextTokens, checked by the tool
	at("format", enum(render.Names()...), byDefault(render.NameOpenAI)),
	at("tokenizer", enum(tokenizer.Names()...)),
	at("facts", between(0, MaxInject)),
	at("recall", between(0, MaxInject)),
}

const getContextDescription = `Get a session's conversation as the messages to send to a model, fitted to a token budget (8000 tokens unless you ask for another) and rendered for a chat API (openai, anthropic or observation). The system prompt and first task are always kept; older steps are left out first, and a tool call is never separated from its result. Returns the messages, their exact token count, which steps were left out, truncated or summarized, and a note saying how to see more when something was left out.`

func (t *tools) getContext(ctx context.Context, in GetContextInput) (ContextOutput, error) {
	op := "get_context of session " + strconv.Quote(in.SessionID)
	if in.Format == "" {
		in.Format = render.NameOpenAI
	}
	_, err := render.ByName(in.Format)
	if err != nil {
		return ContextOutput{}, t.toolError(ctx, op, invalid("format", "unknown format %q (known: %s)", in.Format, strings.Join(render.Names(), ", ")))
	}
	var counter tokenizer.Counter
	if in.Tokenizer != "" {
		if counter, err = tokenizer.Get(in.Tokenizer); err != nil {
			return ContextOutput{}, t.toolError(ctx, op, invalid("tokenizer", "unknown tokenizer %q (known: %s)", in.Tokenizer, strings.Join(tokenizer.Names(), ", ")))
		}
	}
	if in.Budget < 0 || in.Budget > t.cfg.MaxContextTokens {
		return ContextOutput{}, t.toolError(ctx, op, invalid("budget", "must be between 0 and this server's maximum context of %d tokens", t.cfg.MaxContextTokens))
	}
	if err := store.ValidateID(in.SessionID); err != nil {
		return ContextOutput{}, t.toolError(ctx, op, badSessionID(in.SessionID))
	}
	budget, defaulted := in.Budget, in.Budget == 0
	if defaulted {
		budget = t.cfg.DefaultContextBudget
	}
	if in.Facts < 0 || in.Facts > MaxInject || in.Recall < 0 || in.Recall > MaxInject {
		return ContextOutput{}, t.toolError(ctx, op, invalid("facts", "facts and recall must be between 0 and %d", MaxInject))
	}
	req := sessions.ContextRequest{Tenant: t.tenant, SessionID: in.SessionID, Budget: budget,
		Format: in.Format, Counter: counter, TruncateToFill: in.TruncateToFill}
	if in.Facts > 0 {
		req.Facts = &sessions.FactsRequest{K: in.Facts}
	}
	if in.Recall > 0 {
		req.Recall = &sessions.RecallRequest{K: in.Recall}
	}
	c, err := t.cfg.Sessions.Context(ctx, req)
	var be *agentmem.BudgetError
	if defaulted && errors.As(err, &be) && be.Required <= t.cfg.MaxContextTokens {
		// The default is no budget the caller chose: the pinned
		// messages, which every context shows, get what they need.
		req.Budget = be.Required
		c, err = t.cfg.Sessions.Context(ctx, req)
	}
	if err != nil {
		if errors.Is(err, agentmem.ErrNotFound) {
			err = sessionNotFound(in.SessionID)
		}
		return ContextOutput{}, t.toolError(ctx, op, err)
	}
	wire, err := render.Encode(in.Format, c.Messages)
	if err != nil {
		return ContextOutput{}, t.toolError(ctx, op, err)
	}
	var note notes
	if c.DroppedSteps > 0 {
		why := ""
		if defaulted {
			why = " (the default, as the call gave no budget)"
		}
		note.add("%d older steps of the session were left out to fit %d tokens%s.", c.DroppedSteps, req.Budget, why)
	}
	if c.NewestTruncated {
		note.add("The newest step did not fit whole: its tool outputs are cut.")
	}
	if len(note) > 0 {
		if req.Budget < t.cfg.MaxContextTokens {
			note.add("Call get_context again with a larger budget (at most %d) to see more.", t.cfg.MaxContextTokens)
		} else {
			note.add("This is the server's maximum context.")
		}
	}
	return ContextOutput{
		Format: c.Format, Tokenizer: c.Counter, Budget: req.Budget, Tokens: c.Tokens, Messages: wire,
		Steps: nonNil(c.Steps), Dropped: nonNil(c.Dropped), DroppedSteps: c.DroppedSteps,
		Truncated: nonNil(c.Truncated), NewestTruncated: c.NewestTruncated, Summarized: nonNil(c.Summarized), Pending: pendingCalls(c.Pending), LastSeq: c.LastSeq,
		Facts: factIDs(c.Facts), Recalled: c.Recalled, Note: note.String(),
	}, nil
}

// factIDs lists the IDs of the facts a context shows.
func factIDs(hits []facts.Hit) []string {
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.Fact.ID)
	}
	return ids
}

// pendingCalls converts a context's pending actions.
func pendingCalls(ps []agentmem.PendingAction) []PendingCalls {
	out := make([]PendingCalls, len(ps))
	for i, p := range ps {
		out[i] = PendingCalls{Seq: int64(p.Step), ToolCallIDs: p.ToolCallIDs}
	}
	return out
}

// pop

// PopInput is the input of pop.
type PopInput struct {
	SessionID       string `json:"session_id" jsonschema:"the session to pop the newest message of"`
	ExpectedLastSeq *int64 `json:"expected_last_seq,omitempty" jsonschema:"pop only if the session's last sequence number is still this one (from an earlier call), so that a retry cannot pop twice"`
}

// PopOutput is the output of pop.
type PopOutput struct {
	Seq     int64   `json:"seq" jsonschema:"the log sequence number of the step the message belonged to"`
	Message Message `json:"message" jsonschema:"the message removed"`
	Removed bool    `json:"removed" jsonschema:"true when the message's whole step left the session; false when it was one tool result, whose call is pending again"`
	LastSeq int64   `json:"last_seq" jsonschema:"the session's last sequence number after the pop"`
}

var popSchema = []edit{
	at("session_id", sessionIDEdits...),
	at("expected_last_seq", atLeast(0)),
}

const popDescription = `Remove the newest message from a session's conversation and return it (to undo or redo the last item). The newest message is the last one: a tool result (its tool call is then pending again, until a new result is appended), else an assistant message (with its tool calls), a user message or the system prompt. The log keeps a record of the removal. Fails if the session is empty.`

func (t *tools) pop(ctx context.Context, in PopInput) (PopOutput, error) {
	op := "pop from session " + strconv.Quote(in.SessionID)
	if err := store.ValidateID(in.SessionID); err != nil {
		return PopOutput{}, t.toolError(ctx, op, badSessionID(in.SessionID))
	}
	resp, err := t.cfg.Sessions.Pop(ctx, sessions.PopRequest{Tenant: t.tenant, SessionID: in.SessionID, ExpectedLastSeq: in.ExpectedLastSeq})
	switch {
	case errors.Is(err, agentmem.ErrNotFound):
		return PopOutput{}, t.toolError(ctx, op, sessionNotFound(in.SessionID))
	case errors.Is(err, store.ErrNothingToPop):
		return PopOutput{}, fmt.Errorf("%s: the session has no messages to pop", op)
	case err != nil && in.ExpectedLastSeq != nil && errors.Is(err, agentmem.ErrConflict):
		return PopOutput{}, fmt.Errorf("%s: the session changed since last_seq %d: nothing was popped; read it again (get_context) before popping", op, *in.ExpectedLastSeq)
	case err != nil:
		return PopOutput{}, t.toolError(ctx, op, err)
	}
	m := agentmem.ChatRoles(resp.Message)
	out := Message{Role: string(m.Role), Content: m.Text(), Name: m.Name, ToolCallID: m.ToolCallID, IsError: m.Metadata[agentmem.MetaIsError] == "true", Metadata: m.Metadata}
	for _, p := range m.Content {
		if p.Type == agentmem.PartImage && p.Image != nil {
			out.Images = append(out.Images, Image{URL: imageURL(*p.Image), Detail: p.Image.Detail})
		}
	}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return PopOutput{Seq: resp.Seq, Message: out, Removed: resp.Rest == nil, LastSeq: resp.LastSeq}, nil
}

// imageURL returns an image's URL, or a data: URL of its inline bytes
// (their media type sniffed when not given).
func imageURL(img agentmem.Image) string {
	if img.URL != "" {
		return img.URL
	}
	mt := img.MediaType
	if mt == "" {
		mt = http.DetectContentType(img.Data)
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
