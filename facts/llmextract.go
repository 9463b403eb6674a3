package facts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/internal/textcut"
	"github.com/agentmem/agentmem/llm"
)

// DefaultMaxDecisions bounds the decisions LLMExtractor accepts from one
// turn when LLMExtractor.MaxDecisions is 0.
const DefaultMaxDecisions = 16

// DecisionSchema is the JSON Schema of the object LLMExtractor asks the
// model for. It is stated in the prompt, since the request asks for JSON
// output (response_format json_object) that any OpenAI-compatible server
// supports.
var DecisionSchema = json.RawMessage(`{"type":"object","properties":{"decisions":{"type":"array","items":{"type":"object",` +
	`"properties":{"action":{"type":"string","enum":["add","reinforce","supersede","ignore"]},` +
	`"id":{"type":"string","description":"the id of a known fact, for reinforce and supersede"},` +
	`"text":{"type":"string","description":"the new fact, for add and supersede"},` +
	`"confidence":{"type":"number","minimum":0,"maximum":1}},` +
	`"required":["action"],"additionalProperties":false}}},"required":["decisions"],"additionalProperties":false}`)

// extractInstructions is the system prompt of LLMExtractor.
const extractInstructions = `You maintain long-term memory about a user: short facts that stay useful across conversations (preferences, circumstances, relationships, plans, constraints such as allergies or accessibility needs).

You are given the facts already known (each with an id) and one conversation turn. Decide what the turn teaches about the user:
- "add": a new durable fact stated or clearly implied by the user. Write it as one short self-contained sentence in the third person ("Prefers metric units."). Do not add what is already known.
- "reinforce": the turn confirms a known fact; give its id.
- "supersede": the turn contradicts a known fact; give its id and the new fact as text.
- "ignore": nothing worth remembering.
Only remember what the user says about themselves; not the assistant's suggestions, not one-off task details, not secrets such as passwords. confidence (0 to 1) is how sure you are; omit it when unsure.

Answer with only a JSON object matching this JSON Schema, and nothing else:
`

// LLMExtractor is an Extractor that asks a chat model (any
// OpenAI-compatible endpoint, through llm.Client) for decisions as JSON.
// Its output is validated: an unknown action, an id that is not one of
// the known facts, a missing or empty text, a confidence outside [0, 1]
// or any extra field rejects it. Rejected output is sent back to the model
// with the reason, once; a second failure is an *ExtractionError.
type LLMExtractor struct {
	// Client is the chat client; required.
	Client *llm.Client
	// Model overrides the client's model for extraction.
	Model string
	// MaxDecisions bounds the decisions taken from one turn; 0 means
	// DefaultMaxDecisions. More is malformed output.
	MaxDecisions int
	// MaxTokens caps the model's answer; 0 means 1024.
	MaxTokens int
}

// wireFact is a known fact as shown to the model: a short id ("f1") that
// a model copies reliably, instead of a UUID.
type wireFact struct {
	ID         string  `json:"id"`
	Text       string  `json:"text"`
	Confidence float64 `json:"confidence"`
}

// wireMessage is a turn message as shown to the model.
type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Extract implements Extractor.
func (e *LLMExtractor) Extract(ctx context.Context, req ExtractRequest) ([]Decision, error) {
	if e.Client == nil {
		return nil, &ExtractionError{Err: errors.New("LLMExtractor.Client is nil")}
	}
	ids := make(map[string]string, len(req.Facts))
	in := struct {
		Known []wireFact    `json:"known_facts"`
		Turn  []wireMessage `json:"turn"`
	}{Known: []wireFact{}}
	for i, f := range req.Facts {
		short := "f" + strconv.Itoa(i+1)
		ids[short] = f.ID
		in.Known = append(in.Known, wireFact{ID: short, Text: f.Text, Confidence: roundConfidence(f.Confidence)})
	}
	for _, msg := range req.Messages {
		if text := msg.Text(); text != "" {
			in.Turn = append(in.Turn, wireMessage{Role: string(msg.Role), Content: text})
		}
	}
	if len(in.Turn) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(in)
	if err != nil {
		return nil, &ExtractionError{Err: err}
	}
	msgs := []llm.Message{
		{Role: "system", Content: llm.TextContent(extractInstructions + string(DecisionSchema))},
		{Role: "user", Content: llm.TextContent(string(body))},
	}
	maxTokens := e.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 1024
	}
	zero := 0.0
	var last string
	for attempt := 1; ; attempt++ {
		resp, err := e.Client.Chat(ctx, llm.ChatRequest{
			Model: e.Model, Messages: msgs, JSONMode: true, Temperature: &zero, MaxTokens: maxTokens,
		})
		if err != nil {
			return nil, &ExtractionError{Attempts: attempt, Output: last, Err: err}
		}
		out := resp.Message.Content.String()
		decisions, err := decodeDecisions(out, ids, e.maxDecisions())
		if err == nil {
			return decisions, nil
		}
		last = textcut.Prefix(out, 512)
		if attempt == 2 {
			return nil, &ExtractionError{Attempts: attempt, Output: last, Err: err}
		}
		msgs = append(msgs,
			llm.Message{Role: "assistant", Content: llm.TextContent(textcut.Prefix(out, 4096))},
			llm.Message{Role: "user", Content: llm.TextContent("That answer was rejected: " + err.Error() +
				". Answer again with only the JSON object the schema describes, using only the ids of known_facts.")})
	}
}

func (e *LLMExtractor) maxDecisions() int {
	if e.MaxDecisions > 0 {
		return e.MaxDecisions
	}
	return DefaultMaxDecisions
}

// roundConfidence rounds c to two decimals for the prompt.
func roundConfidence(c float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(c, 'f', 2, 64), 64)
	return v
}

// wireDecision is one decision as the model writes it.
type wireDecision struct {
	Action     *string  `json:"action"`
	ID         *string  `json:"id"`
	Text       *string  `json:"text"`
	Confidence *float64 `json:"confidence"`
}

// decodeDecisions decodes and validates a model's answer: one JSON object
// {"decisions": [...]} (optionally inside a Markdown code fence), whose
// ids are keys of ids (mapped to the facts' real IDs), with at most max
// decisions. Ignore decisions are dropped from the result. Every error is
// an *agentmem.InvalidError whose reason can be shown to the model.
func decodeDecisions(out string, ids map[string]string, max int) ([]Decision, error) {
	data := []byte(stripFence(out))
	var doc struct {
		Decisions *[]wireDecision `json:"decisions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, invalid("output", "is not the JSON object asked for: %s", jsonReason(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("output", "has text after the JSON object")
	}
	if doc.Decisions == nil {
		return nil, invalid("decisions", "is required")
	}
	ws := *doc.Decisions
	if len(ws) > max {
		return nil, invalid("decisions", "has %d entries (at most %d)", len(ws), max)
	}
	var out2 []Decision
	superseded := map[string]bool{}
	for i, w := range ws {
		field := fmt.Sprintf("decisions[%d].", i)
		if w.Action == nil {
			return nil, invalid(field+"action", "is required")
		}
		d := Decision{Op: Op(*w.Action)}
		if w.Text != nil {
			d.Text = strings.TrimSpace(*w.Text)
			if d.Text == "" && d.Op != OpIgnore && d.Op != OpReinforce {
				return nil, invalid(field+"text", "is empty")
			}
		}
		if d.Op == OpReinforce {
			d.Text = "" // a reinforce needs no text; a model may repeat the fact's
		}
		if w.ID != nil {
			if d.Op == OpAdd || d.Op == OpIgnore {
				return nil, invalid(field+"id", "an %s decision names no fact", d.Op)
			}
			real, ok := ids[*w.ID]
			if !ok {
				return nil, invalid(field+"id", "%.40q is not the id of a known fact", *w.ID)
			}
			d.FactID = real
		}
		if w.Confidence != nil {
			d.Confidence = *w.Confidence
		}
		if d.Op == OpIgnore {
			d.Text = ""
		}
		if err := d.validate(field, Source{}, nil); err != nil {
			return nil, err
		}
		if d.Op == OpSupersede {
			if superseded[d.FactID] {
				return nil, invalid(field+"id", "supersedes %s twice", *w.ID)
			}
			superseded[d.FactID] = true
		}
		if d.Op != OpIgnore {
			out2 = append(out2, d)
		}
	}
	return out2, nil
}

// stripFence removes a Markdown code fence (```json ... ```) around s.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return s
	}
	t = strings.TrimSuffix(t[3:], "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 && !strings.ContainsAny(t[:nl], "{[") {
		t = t[nl+1:] // the fence's language tag
	}
	return t
}

// jsonReason turns a decoding error into a reason for the model.
func jsonReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q has the wrong type (%s)", te.Field, te.Value)
	}
	return textcut.Prefix(err.Error(), 200)
}
