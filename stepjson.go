package agentmem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/agentmem/agentmem/internal/jsoncheck"
)

// Each step's JSON is an object with a "type" field naming its kind. The
// step's own fields sit beside the header fields (number, id, time,
// metadata):
//
//	{"type":"action","number":4,"id":"...","tool_calls":[...],"results":[...]}
//
// Decoding is strict: unknown fields and unknown types are refused, so a
// misspelt field is an error rather than silently lost data. Missing
// required fields are refused too, even as null. They are those
// MarshalStep always writes:
//
//   - a system prompt's and a scratchpad's content;
//   - a task's task, a plan's plan, a final answer's answer;
//   - a summary's summary, a message step's message;
//   - a tool result's call_id and content, a covered range's from and to.
//
// A wrapper struct decodes each required field into a pointer of its own.
// It shadows the step's field of the same JSON name, so that its absence
// shows.

// v1Encoding makes the JSON v2 encoder write exactly what encoding/json
// writes: HTML-safe escapes, sorted map keys, omitempty as it means there.
// It is faster. A step's JSON is what the stores keep, so its bytes must
// not change.
var v1Encoding = jsonv1.DefaultOptionsV1()

// marshalJSON encodes v as encoding/json's Marshal does. The bytes are the
// same where its strings are valid UTF-8, as every valid step's are. Of
// invalid UTF-8, encoding/json writes the escape \ufffd and this the
// character U+FFFD: the same text.
func marshalJSON(v any) ([]byte, error) { return marshalEngine(v) }

// marshalEngine is marshalJSON's encoder; tests compare it with
// encoding/json's.
var marshalEngine = func(v any) ([]byte, error) { return jsonv2.Marshal(v, v1Encoding) }

// MarshalStep encodes a step as JSON.
func MarshalStep(s Step) ([]byte, error) {
	if s == nil {
		return nil, invalidf("step", "is nil")
	}
	// The step's JSON form directly: through its MarshalJSON, the
	// encoder would check and copy the bytes the method returns, and
	// copy them again.
	if w, ok := s.(interface{ wire() any }); ok {
		return marshalJSON(w.wire())
	}
	return marshalJSON(s)
}

// UnmarshalStep decodes and validates one step. Errors wrap ErrInvalid.
func UnmarshalStep(data []byte) (Step, error) {
	// encoding/json would silently turn invalid UTF-8 into U+FFFD.
	if !utf8.Valid(data) {
		return nil, invalidf("step", "is not valid UTF-8")
	}
	kind, ok := leadingKind(data)
	if !ok {
		var probe struct {
			Type StepKind `json:"type"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			return nil, jsonInvalid("step", err)
		}
		kind = probe.Type
	}
	s, err := newStep(kind)
	if err != nil {
		return nil, err
	}
	// Every step type decodes itself strictly, the whole text included
	// (decodeStrict): encoding/json's own pass over it first would only
	// read it once more.
	if err := s.(json.Unmarshaler).UnmarshalJSON(data); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// leadingKind reads the kind of a step whose JSON starts with its "type"
// field, as MarshalStep writes it. It does not scan the whole document,
// since loading a long session decodes thousands of steps. Other input
// goes the general way. The strict decode that follows checks the type
// again.
func leadingKind(data []byte) (StepKind, bool) {
	const prefix = `{"type":"`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		return "", false
	}
	rest := data[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return StepKind(rest[:end]), true
}

// newStep returns a zero step of the given kind.
func newStep(kind StepKind) (Step, error) {
	switch kind {
	case KindSystemPrompt:
		return &SystemPromptStep{}, nil
	case KindTask:
		return &TaskStep{}, nil
	case KindAction:
		return &ActionStep{}, nil
	case KindPlanning:
		return &PlanningStep{}, nil
	case KindScratchpad:
		return &ScratchpadStep{}, nil
	case KindFinalAnswer:
		return &FinalAnswerStep{}, nil
	case KindSummary:
		return &SummaryStep{}, nil
	case KindMessage:
		return &MessageStep{}, nil
	case "":
		return nil, invalidf("type", "is required")
	}
	return nil, invalidf("type", "unknown step type %q", kind)
}

// StepList is a list of steps that can be decoded from a JSON array.
type StepList []Step

// UnmarshalJSON decodes an array of steps, naming the index of a bad one.
func (l *StepList) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return jsonInvalid("steps", err)
	}
	out := make(StepList, 0, len(raw))
	for i, r := range raw {
		s, err := UnmarshalStep(r)
		if err != nil {
			return fmt.Errorf("steps[%d]: %w", i, err)
		}
		out = append(out, s)
	}
	*l = out
	return nil
}

// jsonInvalid turns a decoding error into an *InvalidError, keeping an
// *InvalidError that is already there.
func jsonInvalid(field string, err error) error {
	var inv *InvalidError
	if errors.As(err, &inv) {
		return err
	}
	return &InvalidError{Field: field, Reason: err.Error()}
}

// required sets *dst to *v, or reports the missing field.
func required[T any](field string, v *T, dst *T) error {
	if v == nil {
		return invalidf(field, "is required")
	}
	*dst = *v
	return nil
}

// decodeStrict decodes data into v in one pass (jsoncheck.Decode) and
// checks the decoded kind. It refuses unknown fields, member names that
// match a field only in another letter case, repeated keys, invalid UTF-8
// and trailing data.
func decodeStrict(data []byte, v any, got *StepKind, want StepKind) error {
	if err := jsoncheck.Decode(data, v); err != nil {
		return decodeError(string(want), err)
	}
	if *got != want {
		return invalidf("type", "is %q, want %q", *got, want)
	}
	return nil
}

// decodeError turns an error of jsoncheck.Decode into an *InvalidError
// naming the field (field when the text as a whole is wrong). The
// *InvalidError of a value that decodes itself (a tool call, a message's
// content) is kept as it is.
func decodeError(field string, err error) error {
	var e *jsoncheck.Error
	if !errors.As(err, &e) {
		return jsonInvalid(field, err)
	}
	if e.Err != nil {
		var inv *InvalidError
		if errors.As(e.Err, &inv) {
			return inv
		}
		return &InvalidError{Field: e.Path, Reason: e.Err.Error()}
	}
	if e.Path == "" {
		return &InvalidError{Field: field, Reason: "the JSON text " + e.Reason}
	}
	return &InvalidError{Field: e.Path, Reason: e.Reason}
}

// The per-type methods below add and check the "type" field. They are
// written out per type because Go cannot embed a type parameter.

// MarshalJSON implements json.Marshaler.
func (s *SystemPromptStep) MarshalJSON() ([]byte, error) { return marshalJSON(s.wire()) }

// wire is the step's JSON form: its fields and its type.
func (s *SystemPromptStep) wire() any {
	type alias SystemPromptStep
	return struct {
		Type StepKind `json:"type"`
		*alias
	}{KindSystemPrompt, (*alias)(s)}
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *SystemPromptStep) UnmarshalJSON(data []byte) error {
	type alias SystemPromptStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
		Content *string `json:"content"`
	}{alias: (*alias)(s)}
	if err := decodeStrict(data, &w, &w.Type, KindSystemPrompt); err != nil {
		return err
	}
	return required("content", w.Content, &s.Content)
}

// MarshalJSON implements json.Marshaler.
func (s *TaskStep) MarshalJSON() ([]byte, error) { return marshalJSON(s.wire()) }

// wire is the step's JSON form: its fields and its type.
func (s *TaskStep) wire() any {
	type alias TaskStep
	return struct {
		Type StepKind `json:"type"`
		*alias
	}{KindTask, (*alias)(s)}
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *TaskStep) UnmarshalJSON(data []byte) error {
	type alias TaskStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
		Task *string `json:"task"`
	}{alias: (*alias)(s)}
	if err := decodeStrict(data, &w, &w.Type, KindTask); err != nil {
		return err
	}
	return required("task", w.Task, &s.Task)
}

// MarshalJSON implements json.Marshaler.
func (s *ActionStep) MarshalJSON() ([]byte, error) { return marshalJSON(s.wire()) }

// wire is the step's JSON form: its fields and its type.
func (s *ActionStep) wire() any {
	type alias ActionStep
	return struct {
		Type StepKind `json:"type"`
		*alias
	}{KindAction, (*alias)(s)}
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *ActionStep) UnmarshalJSON(data []byte) error {
	type alias ActionStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
		Results []struct {
			CallID   *string           `json:"call_id"`
			ID       string            `json:"id,omitempty"`
			Content  *string           `json:"content"`
			IsError  bool              `json:"is_error,omitempty"`
			Metadata map[string]string `json:"metadata,omitempty"`
			Images   []Image           `json:"images,omitempty"`
		} `json:"results,omitempty"`
	}{alias: (*alias)(s)}
	if err := decodeStrict(data, &w, &w.Type, KindAction); err != nil {
		return err
	}
	s.Results = nil
	if w.Results != nil {
		s.Results = make([]ToolResult, len(w.Results))
	}
	for i, r := range w.Results {
		f := fmt.Sprintf("results[%d].", i)
		res := ToolResult{ID: r.ID, IsError: r.IsError, Metadata: r.Metadata, Images: r.Images}
		if err := required(f+"call_id", r.CallID, &res.CallID); err != nil {
			return err
		}
		if err := required(f+"content", r.Content, &res.Content); err != nil {
			return err
		}
		s.Results[i] = res
	}
	return nil
}

// MarshalJSON implements json.Marshaler.
func (s *PlanningStep) MarshalJSON() ([]byte, error) { return marshalJSON(s.wire()) }

// wire is the step's JSON form: its fields and its type.
func (s *PlanningStep) wire() any {
	type alias PlanningStep
	return struct {
		Type StepKind `json:"type"`
		*alias
	}{KindPlanning, (*alias)(s)}
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *PlanningStep) UnmarshalJSON(data []byte) error {
	type alias PlanningStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
		Plan *string `json:"plan"`
	}{alias: (*alias)(s)}
	if err := decodeStrict(data, &w, &w.Type, KindPlanning); err != nil {
		return err
	}
	return required("plan", w.Plan, &s.Plan)
}

// MarshalJSON implements json.Marshaler.
func (s *ScratchpadStep) MarshalJSON() ([]byte, error) { return marshalJSON(s.wire()) }

// wire is the step's JSON form: its fields and its type.
func (s *ScratchpadStep) wire() any {
	type alias ScratchpadStep
	return struct {
		Type StepKind `json:"type"`
		*alias
	}{KindScratchpad, (*alias)(s)}
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *ScratchpadStep) UnmarshalJSON(data []byte) error {
	type alias ScratchpadStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
		Content *string `json:"content"`
	}{alias: (*alias)(s)}
	if err := decodeStrict(data, &w, &w.Type, KindScratchpad); err != nil {
		return err
	}
	return required("content", w.Content, &s.Content)
}

// MarshalJSON implements json.Marshaler.
func (s *FinalAnswerStep) MarshalJSON() ([]byte, error) { return marshalJSON(s.wire()) }

// wire is the step's JSON form: its fields and its type.
func (s *FinalAnswerStep) wire() any {
	type alias FinalAnswerStep
	return struct {
		Type StepKind `json:"type"`
		*alias
	}{KindFinalAnswer, (*alias)(s)}
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *FinalAnswerStep) UnmarshalJSON(data []byte) error {
	type alias FinalAnswerStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
		Answer *string `json:"answer"`
	}{alias: (*alias)(s)}
	if err := decodeStrict(data, &w, &w.Type, KindFinalAnswer); err != nil {
		return err
	}
	return required("answer", w.Answer, &s.Answer)
}

// MarshalJSON implements json.Marshaler.
func (s *SummaryStep) MarshalJSON() ([]byte, error) { return marshalJSON(s.wire()) }

// wire is the step's JSON form: its fields and its type.
func (s *SummaryStep) wire() any {
	type alias SummaryStep
	return struct {
		Type StepKind `json:"type"`
		*alias
	}{KindSummary, (*alias)(s)}
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *SummaryStep) UnmarshalJSON(data []byte) error {
	type alias SummaryStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
		Summary *string `json:"summary"`
		Covers  []struct {
			From *int `json:"from"`
			To   *int `json:"to"`
		} `json:"covers"`
	}{alias: (*alias)(s)}
	if err := decodeStrict(data, &w, &w.Type, KindSummary); err != nil {
		return err
	}
	s.Covers = nil
	if w.Covers != nil {
		s.Covers = make([]Range, len(w.Covers))
	}
	for i, r := range w.Covers {
		f := fmt.Sprintf("covers[%d].", i)
		if err := required(f+"from", r.From, &s.Covers[i].From); err != nil {
			return err
		}
		if err := required(f+"to", r.To, &s.Covers[i].To); err != nil {
			return err
		}
	}
	return required("summary", w.Summary, &s.Summary)
}

// MarshalJSON implements json.Marshaler.
func (s *MessageStep) MarshalJSON() ([]byte, error) { return marshalJSON(s.wire()) }

// wire is the step's JSON form: its fields and its type.
func (s *MessageStep) wire() any {
	type alias MessageStep
	return struct {
		Type StepKind `json:"type"`
		*alias
	}{KindMessage, (*alias)(s)}
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *MessageStep) UnmarshalJSON(data []byte) error {
	type alias MessageStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
		Message *Message `json:"message"`
	}{alias: (*alias)(s)}
	if err := decodeStrict(data, &w, &w.Type, KindMessage); err != nil {
		return err
	}
	return required("message", w.Message, &s.Message)
}
