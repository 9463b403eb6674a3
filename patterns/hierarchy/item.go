package hierarchy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem"
)

// Tier names a level of the hierarchy.
type Tier string

// The tiers, from always shown to recalled on demand.
const (
	Core     Tier = "core"
	Working  Tier = "working"
	Episodic Tier = "episodic"
)

// Item is an entry of the core or episodic tier.
type Item struct {
	// ID names the entry: the ID of the step it came from, or for an
	// episodic chunk "chunk-<first step number>".
	ID string `json:"id"`
	// Tier is where the entry is now.
	Tier Tier `json:"tier"`
	// Text is what the model is shown: the step's recall text, or the
	// chunk's summary.
	Text string `json:"text"`
	// Importance is in [0, 1]; at or above Options.CoreThreshold the
	// entry belongs to the core tier.
	Importance float64 `json:"importance"`
	// Recalls counts how often the entry was recalled while episodic.
	Recalls int `json:"recalls,omitempty"`
	// Covers lists the step numbers (sequence numbers of the session's
	// log) the entry stands for.
	Covers []agentmem.Range `json:"covers,omitempty"`
	// Time is when the newest step it stands for happened.
	Time time.Time `json:"time,omitzero"`
}

// clone returns a deep copy of the item.
func (it *Item) clone() *Item {
	c := *it
	c.Covers = append([]agentmem.Range(nil), it.Covers...)
	return &c
}

// first returns the lowest step number the item covers, or 0.
func (it *Item) first() int {
	if len(it.Covers) == 0 {
		return 0
	}
	return it.Covers[0].From
}

// line renders the item as one line of a context block.
func (it *Item) line() string {
	if len(it.Covers) == 0 || it.Tier == Core {
		return it.Text
	}
	return "(steps " + encodeRanges(it.Covers) + ") " + it.Text
}

// checkImportance refuses an importance outside [0, 1] (NaN included).
func checkImportance(v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return &agentmem.InvalidError{Field: "importance", Reason: fmt.Sprintf("%v is not in [0, 1]", v)}
	}
	return nil
}

// formatImportance writes an importance for metadata.
func formatImportance(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// parseImportance reads an importance from metadata; a missing value is 0.
func parseImportance(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, &agentmem.InvalidError{Field: "importance", Reason: fmt.Sprintf("%q is not a number", s)}
	}
	return v, checkImportance(v)
}

// encodeRanges writes ranges as "3-10,12".
func encodeRanges(rs []agentmem.Range) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(r.From))
		if r.To != r.From {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(r.To))
		}
	}
	return b.String()
}

// decodeRanges reads what encodeRanges writes, refusing anything else
// (negative numbers, reversed ranges, junk) with an *agentmem.InvalidError.
// The result is merged and sorted.
func decodeRanges(s string) ([]agentmem.Range, error) {
	if s == "" {
		return nil, nil
	}
	var out []agentmem.Range
	for part := range strings.SplitSeq(s, ",") {
		from, to, isRange := strings.Cut(part, "-")
		a, err := parseStepNumber(from)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseStepNumber(to); err != nil {
				return nil, err
			}
		}
		if b < a {
			return nil, &agentmem.InvalidError{Field: "covers", Reason: fmt.Sprintf("range %q is reversed", part)}
		}
		out = append(out, agentmem.Range{From: a, To: b})
	}
	return agentmem.MergeRanges(out), nil
}

func parseStepNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strings.HasPrefix(s, "+") {
		return 0, &agentmem.InvalidError{Field: "covers", Reason: fmt.Sprintf("%q is not a step number", s)}
	}
	return n, nil
}
