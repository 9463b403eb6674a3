package agentmem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Each step's JSON is an object with a "type" field naming its kind and the
// step's own fields beside the header fields (number, id, time, metadata):
//
//	{"type":"action","number":4,"id":"...","tool_calls":[...],"results":[...]}
//
// Decoding is strict: unknown fields and unknown types are refused, so a
// misspelt field is an error rather than silently lost data.

// MarshalStep encodes a step as JSON.
func MarshalStep(s Step) ([]byte, error) {
	if s == nil {
		return nil, invalidf("step", "is nil")
	}
	return json.Marshal(s)
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
	if err := json.Unmarshal(data, s); err != nil {
		return nil, jsonInvalid("step", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// leadingKind reads the kind of a step whose JSON starts with its "type"
// field, as MarshalStep writes it, without scanning the whole document
// (loading a long session decodes thousands of steps). Other input goes
// the general way. The strict decode that follows checks the type again.
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

// decodeStrict decodes data into v refusing unknown fields, and checks the
// decoded kind.
func decodeStrict(data []byte, v any, got *StepKind, want StepKind) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonInvalid(string(want), err)
	}
	if dec.More() {
		return invalidf(string(want), "trailing data after the step object")
	}
	if *got != want {
		return invalidf("type", "is %q, want %q", *got, want)
	}
	return nil
}

// The per-type methods below add and check the "type" field. They are
// written out per type because Go cannot embed a type parameter.

// MarshalJSON implements json.Marshaler.
func (s *SystemPromptStep) MarshalJSON() ([]byte, error) {
	type alias SystemPromptStep
	return json.Marshal(struct {
		Type StepKind `json:"type"`
		*alias
	}{KindSystemPrompt, (*alias)(s)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *SystemPromptStep) UnmarshalJSON(data []byte) error {
	type alias SystemPromptStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
	}{alias: (*alias)(s)}
	return decodeStrict(data, &w, &w.Type, KindSystemPrompt)
}

// MarshalJSON implements json.Marshaler.
func (s *TaskStep) MarshalJSON() ([]byte, error) {
	type alias TaskStep
	return json.Marshal(struct {
		Type StepKind `json:"type"`
		*alias
	}{KindTask, (*alias)(s)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *TaskStep) UnmarshalJSON(data []byte) error {
	type alias TaskStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
	}{alias: (*alias)(s)}
	return decodeStrict(data, &w, &w.Type, KindTask)
}

// MarshalJSON implements json.Marshaler.
func (s *ActionStep) MarshalJSON() ([]byte, error) {
	type alias ActionStep
	return json.Marshal(struct {
		Type StepKind `json:"type"`
		*alias
	}{KindAction, (*alias)(s)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *ActionStep) UnmarshalJSON(data []byte) error {
	type alias ActionStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
	}{alias: (*alias)(s)}
	return decodeStrict(data, &w, &w.Type, KindAction)
}

// MarshalJSON implements json.Marshaler.
func (s *PlanningStep) MarshalJSON() ([]byte, error) {
	type alias PlanningStep
	return json.Marshal(struct {
		Type StepKind `json:"type"`
		*alias
	}{KindPlanning, (*alias)(s)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *PlanningStep) UnmarshalJSON(data []byte) error {
	type alias PlanningStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
	}{alias: (*alias)(s)}
	return decodeStrict(data, &w, &w.Type, KindPlanning)
}

// MarshalJSON implements json.Marshaler.
func (s *ScratchpadStep) MarshalJSON() ([]byte, error) {
	type alias ScratchpadStep
	return json.Marshal(struct {
		Type StepKind `json:"type"`
		*alias
	}{KindScratchpad, (*alias)(s)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *ScratchpadStep) UnmarshalJSON(data []byte) error {
	type alias ScratchpadStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
	}{alias: (*alias)(s)}
	return decodeStrict(data, &w, &w.Type, KindScratchpad)
}

// MarshalJSON implements json.Marshaler.
func (s *FinalAnswerStep) MarshalJSON() ([]byte, error) {
	type alias FinalAnswerStep
	return json.Marshal(struct {
		Type StepKind `json:"type"`
		*alias
	}{KindFinalAnswer, (*alias)(s)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *FinalAnswerStep) UnmarshalJSON(data []byte) error {
	type alias FinalAnswerStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
	}{alias: (*alias)(s)}
	return decodeStrict(data, &w, &w.Type, KindFinalAnswer)
}

// MarshalJSON implements json.Marshaler.
func (s *SummaryStep) MarshalJSON() ([]byte, error) {
	type alias SummaryStep
	return json.Marshal(struct {
		Type StepKind `json:"type"`
		*alias
	}{KindSummary, (*alias)(s)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *SummaryStep) UnmarshalJSON(data []byte) error {
	type alias SummaryStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
	}{alias: (*alias)(s)}
	return decodeStrict(data, &w, &w.Type, KindSummary)
}

// MarshalJSON implements json.Marshaler.
func (s *MessageStep) MarshalJSON() ([]byte, error) {
	type alias MessageStep
	return json.Marshal(struct {
		Type StepKind `json:"type"`
		*alias
	}{KindMessage, (*alias)(s)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *MessageStep) UnmarshalJSON(data []byte) error {
	type alias MessageStep
	w := struct {
		Type StepKind `json:"type"`
		*alias
	}{alias: (*alias)(s)}
	return decodeStrict(data, &w, &w.Type, KindMessage)
}
