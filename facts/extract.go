package facts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/textcut"
)

// DefaultExtractContext is how many of the user's facts Memory.Extract
// shows the extractor: the most relevant to the turn, then the most
// confident.
const DefaultExtractContext = 20

// ExtractRequest is what an Extractor is given.
type ExtractRequest struct {
	// Messages are the turn: the user's message(s) and the assistant's
	// reply.
	Messages []agentmem.Message
	// Facts are the user's valid facts most relevant to the turn, which
	// decisions may reinforce or supersede by ID.
	Facts []Fact
}

// Extractor proposes what to remember from a turn. Decisions that name a
// fact must name one of req.Facts. Extract must not store anything.
type Extractor interface {
	Extract(ctx context.Context, req ExtractRequest) ([]Decision, error)
}

// ExtractorFunc adapts a function to Extractor.
type ExtractorFunc func(ctx context.Context, req ExtractRequest) ([]Decision, error)

// Extract calls f.
func (f ExtractorFunc) Extract(ctx context.Context, req ExtractRequest) ([]Decision, error) {
	return f(ctx, req)
}

// ErrExtraction is wrapped by every *ExtractionError.
var ErrExtraction = errors.New("facts: extraction failed")

// ExtractionError reports an extraction that produced nothing usable: the
// model's output was malformed twice, or the model could not be reached.
// The turn itself is not affected (it is not the extractor's to store);
// only the facts it would have yielded are lost, so callers log it and go
// on. It wraps ErrExtraction and the cause.
type ExtractionError struct {
	// Attempts is the number of model calls made.
	Attempts int
	// Output is the last output rejected, cut to 512 bytes; empty when
	// the model was not reached.
	Output string
	// Err is the cause: why the output was rejected (an
	// *agentmem.InvalidError) or the client's error.
	Err error
}

// Error describes the failure.
func (e *ExtractionError) Error() string {
	return fmt.Sprintf("facts: extraction failed after %d attempt(s): %v", e.Attempts, e.Err)
}

// Unwrap returns ErrExtraction and the cause.
func (e *ExtractionError) Unwrap() []error { return []error{ErrExtraction, e.Err} }

// Turn is a conversation turn to learn from.
type Turn struct {
	Tenant   string
	UserID   string
	Messages []agentmem.Message
	// Source is recorded on the facts the turn adds.
	Source Source
	// Once extracts the turn at most once. Source.SessionID (required)
	// and Source.StepSeq name the turn, as the session and the step that
	// ends it. Memory.Extract records that the turn was extracted, in the
	// user's audit log (an ActionExtracted entry), atomically with what
	// it learnt. A turn extracted already is not shown to the extractor
	// again and changes nothing (Extraction.Replayed). Give it only when
	// the source names one turn: two turns given the same source are one
	// turn, and the second is not learnt from.
	Once bool
}

// Extraction is what Memory.Extract did.
type Extraction struct {
	// Decisions are the extractor's, in order.
	Decisions []Decision `json:"decisions"`
	// Results are what each decision did, in the same order.
	Results []Result `json:"results"`
	// Replayed reports a turn with Once that was extracted already, by
	// an earlier call or by one that raced with this one. Nothing was
	// written, and Decisions and Results are empty: what the turn taught
	// is in the facts already.
	Replayed bool `json:"replayed,omitempty"`
}

// Extract learns from a turn: it shows ex the turn and the user's facts
// most relevant to it (DefaultExtractContext of them), then applies the
// decisions with Apply, atomically. An extractor error is returned as it
// is (an *ExtractionError for LLMExtractor) and nothing is written.
//
// A turn with Once is extracted once. If the store says that it was
// (Extractions), Extract returns an Extraction with Replayed set,
// without calling ex. Otherwise the record that it was is written with
// the decisions. An extraction that raced with this one and recorded it
// first makes this one Replayed too, its decisions not applied.
func (m *Memory) Extract(ctx context.Context, ex Extractor, turn Turn) (*Extraction, error) {
	if err := ValidateUser(turn.Tenant, turn.UserID); err != nil {
		return nil, err
	}
	if turn.Once {
		if err := checkSource(turn.Source); err != nil {
			return nil, err
		}
		if turn.Source.SessionID == "" {
			return nil, invalid("source.session_id", "is required to extract a turn once: it names the turn, with source.step_seq")
		}
	}
	if len(turn.Messages) == 0 {
		return &Extraction{}, nil
	}
	if turn.Once {
		if log, ok := m.store.(Extractions); ok {
			done, err := log.Extracted(ctx, turn.Tenant, turn.UserID, turn.Source.SessionID, turn.Source.StepSeq)
			if err != nil {
				return nil, err
			}
			if done {
				return &Extraction{Replayed: true}, nil
			}
		}
	}
	hits, err := m.Search(ctx, SearchRequest{
		Tenant: turn.Tenant, UserID: turn.UserID, Query: turnQuery(turn.Messages),
		K: DefaultExtractContext, Fill: true,
	})
	if err != nil {
		return nil, err
	}
	known := make([]Fact, len(hits))
	for i, h := range hits {
		known[i] = h.Fact
	}
	decisions, err := ex.Extract(ctx, ExtractRequest{Messages: turn.Messages, Facts: known})
	if err != nil {
		return nil, err
	}
	results, err := m.apply(ctx, turn.Tenant, turn.UserID, turn.Source, decisions, turn.Once)
	if turn.Once && errors.Is(err, ErrExtracted) {
		return &Extraction{Replayed: true}, nil
	}
	if err != nil {
		return nil, err
	}
	return &Extraction{Decisions: decisions, Results: results}, nil
}

// turnQuery is the text of a turn's user messages, or of every message
// if it has none, cut to a search query's size.
func turnQuery(msgs []agentmem.Message) string {
	var b strings.Builder
	for _, role := range []agentmem.Role{agentmem.RoleUser, ""} {
		for _, msg := range msgs {
			if role == "" || msg.Role == role {
				b.WriteString(msg.Text())
				b.WriteByte('\n')
			}
		}
		if strings.TrimSpace(b.String()) != "" {
			break
		}
	}
	return textcut.Prefix(b.String(), MaxTextBytes*8)
}
