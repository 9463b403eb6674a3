package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/jsoncheck"
)

// EncodeStep encodes a step in the core's JSON form (agentmem.MarshalStep):
// an object with a "type" field. The encoding is stable: decoding it with
// DecodeStep and encoding again gives the same bytes, so backends store
// these bytes and every backend returns the same steps byte for byte.
func EncodeStep(s agentmem.Step) ([]byte, error) {
	return agentmem.MarshalStep(s)
}

// DecodeStep decodes and validates a step encoded by EncodeStep. Decoding
// is strict: an unknown type or field, trailing data or an invalid step is
// refused with an error wrapping agentmem.ErrInvalid.
func DecodeStep(data []byte) (agentmem.Step, error) {
	// encoding/json would turn invalid UTF-8 into U+FFFD without a word.
	if !utf8.Valid(data) {
		return nil, invalid("step", "is not valid UTF-8")
	}
	return agentmem.UnmarshalStep(data)
}

// compactionJSON is the JSON form of a CompactionRecord. Working is a
// pointer so that a missing list shows: a full record always has one, an
// amendment never.
type compactionJSON struct {
	Amend    bool              `json:"amend,omitempty"`
	Working  *[]int64          `json:"working,omitempty"`
	Replaced []json.RawMessage `json:"replaced,omitempty"`
	Removed  []int64           `json:"removed,omitempty"`
}

// AmendPrefix is how EncodeCompaction begins the encoding of an
// amendment, and of no full record (those begin with {"working":): a
// database backend tells the two forms apart by the first bytes of a
// stored compaction entry, without decoding it.
const AmendPrefix = `{"amend":true`

// EncodeCompaction encodes a compaction record, Replaced copies included
// (in their step JSON), as
//
//	{"working":[1,2,6,5],"replaced":[{"type":"action",...}],"removed":[3,4]}
//
// or, for an amendment,
//
//	{"amend":true,"replaced":[{"type":"action",...}]}
//
// Like EncodeStep it is stable under DecodeCompaction. A full record's
// nil Working list encodes as []. An amendment with a Working or Removed
// list is refused (ErrInvalid).
func EncodeCompaction(c *CompactionRecord) ([]byte, error) {
	if c == nil {
		return nil, invalid("compaction", "is nil")
	}
	j := compactionJSON{Amend: c.Amend, Removed: c.Removed}
	if c.Amend {
		if len(c.Working) > 0 || len(c.Removed) > 0 {
			return nil, invalid("compaction", "an amendment has no working or removed list")
		}
	} else {
		w := c.Working
		if w == nil {
			w = []int64{}
		}
		j.Working = &w
	}
	for i, s := range c.Replaced {
		b, err := EncodeStep(s)
		if err != nil {
			return nil, fmt.Errorf("compaction.replaced[%d]: %w", i, err)
		}
		j.Replaced = append(j.Replaced, b)
	}
	return json.Marshal(j)
}

// DecodeCompaction decodes a compaction record encoded by EncodeCompaction
// and checks it as a stored record (positive
// sequence numbers only, replaced copies naming steps of Working). The
// "working" member of a full record is required, even when empty: a
// record without it is refused rather than taken for one that empties the
// working set; an amendment ("amend": true) has none, nor a "removed"
// list. Errors wrap agentmem.ErrInvalid.
func DecodeCompaction(data []byte) (*CompactionRecord, error) {
	return decodeCompaction(data, 0)
}

// DecodeAppendCompaction decodes the compaction record of an append of
// newSteps steps (AppendRequest.Compaction), in the form EncodeCompaction
// gives: as DecodeCompaction, but Working may name the request's steps by
// NewStepRef. Errors wrap agentmem.ErrInvalid.
func DecodeAppendCompaction(data []byte, newSteps int) (*CompactionRecord, error) {
	return decodeCompaction(data, newSteps)
}

// decodeCompaction decodes and checks a compaction record for an append
// of newSteps steps.
func decodeCompaction(data []byte, newSteps int) (*CompactionRecord, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil, invalid("compaction", "is not a JSON object")
	}
	if !utf8.Valid(data) {
		return nil, invalid("compaction", "is not valid UTF-8")
	}
	var j compactionJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, invalid("compaction", "%v", err)
	}
	var fe *jsoncheck.Error
	if err := jsoncheck.Fields(data, reflect.TypeOf(j)); errors.As(err, &fe) {
		return nil, invalid("compaction."+fe.Path, "%s", fe.Reason)
	}
	c := &CompactionRecord{Amend: j.Amend, Removed: j.Removed}
	switch {
	case j.Amend && j.Working != nil:
		return nil, invalid("compaction.working", "is not allowed in an amendment: an amendment keeps the working set as it is and only replaces steps by the copies it carries")
	case j.Amend:
	case j.Working == nil:
		// Working is required (EncodeCompaction always writes it; null is
		// missing): a record that left it out would clear the working set
		// without saying so.
		return nil, invalid("compaction.working", "is required: the sequence numbers of the steps the working set keeps, in order ([] keeps none)")
	default:
		c.Working = *j.Working
	}
	for i, raw := range j.Replaced {
		s, err := DecodeStep(raw)
		if err != nil {
			return nil, fmt.Errorf("compaction.replaced[%d]: %w", i, err)
		}
		c.Replaced = append(c.Replaced, s)
	}
	if err := validateCompaction(c, newSteps); err != nil {
		return nil, err
	}
	return c, nil
}

// Clone returns a deep copy of the record.
func (c *CompactionRecord) Clone() *CompactionRecord {
	if c == nil {
		return nil
	}
	out := &CompactionRecord{
		Amend:   c.Amend,
		Working: append([]int64(nil), c.Working...),
		Removed: append([]int64(nil), c.Removed...),
	}
	for _, s := range c.Replaced {
		out.Replaced = append(out.Replaced, agentmem.CloneStep(s))
	}
	return out
}

// Clone returns a deep copy of the entry.
func (e Entry) Clone() Entry {
	e.Step = agentmem.CloneStep(e.Step)
	e.Compaction = e.Compaction.Clone()
	return e
}
