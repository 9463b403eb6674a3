package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Bounds of what the tools give a model: each tool's output is read into
// a model's context, so a long session or a broad search must not fill
// it. An output cut to fit says so in its note, and how to get the rest.
const (
	// DefaultContextBudget is get_context's budget when the call gives
	// none (Config.DefaultContextBudget when set): about 32 KiB of
	// messages. A call may ask for more, up to Config.MaxContextTokens.
	DefaultContextBudget = 8000
	// MaxOutputBytes bounds the JSON of the results of search_memory,
	// recall_facts and list_sessions. The matches, facts or sessions after
	// those that fit are left out, with next_offset (next_page_token) to get
	// them. The first always fits (its window of turns cut if need be).
	MaxOutputBytes = 32 << 10
	// MaxTurnTextBytes bounds the text of a turn search_memory returns;
	// a longer one is cut (Turn.Truncated).
	MaxTurnTextBytes = 2000
	// MaxOffset bounds the offset of search_memory and recall_facts.
	MaxOffset = 500
)

// outputSlack is room kept in MaxOutputBytes for what an output holds
// besides its list: its other members and its note.
const outputSlack = 1024

// jsonSize returns the length of v's JSON encoding.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0 // the outputs are plain data: never
	}
	return len(b)
}

// fitting returns how many of items, from the first, fit together in
// MaxOutputBytes less outputSlack of JSON; at least one when there is one.
func fitting[T any](items []T) int {
	size := 0
	for i, it := range items {
		if size += jsonSize(it) + 1; i > 0 && size > MaxOutputBytes-outputSlack {
			return i
		}
	}
	return len(items)
}

// notes joins the sentences of an output's note.
type notes []string

func (n *notes) add(format string, args ...any) { *n = append(*n, fmt.Sprintf(format, args...)) }

func (n notes) String() string { return strings.Join(n, " ") }
