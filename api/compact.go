package api

// Compaction strategies of POST /v1/sessions/{id}/compact.
const (
	StrategyKeepLastN            = "keep_last_n"
	StrategyTokenBudget          = "token_budget"
	StrategyPruneOldObservations = "prune_old_observations"
	StrategySummarize            = "summarize"
)

// Summarizers of the summarize strategy.
const (
	SummarizerExtractive = "extractive"
	SummarizerLLM        = "llm"
)

// CompactRequest is the body of POST /v1/sessions/{id}/compact (see the
// Strategy constants). Which fields apply depends on the strategy; a
// field of another strategy is refused, so a typo does not silently run
// with defaults.
type CompactRequest struct {
	Strategy string `json:"strategy"`
	// keep_last_n: keep the pinned steps and the newest N others.
	N *int `json:"n,omitempty"`
	// token_budget: keep the pinned steps and the newest that fit.
	Budget *int `json:"budget,omitempty"`
	// prune_old_observations: truncate the tool results of all but the
	// newest keep_last_n actions to max_length bytes.
	KeepLastN *int `json:"keep_last_n,omitempty"`
	MaxLength *int `json:"max_length,omitempty"`
	// summarize: replace all but the newest keep_recent unpinned steps
	// with a summary written by the summarizer.
	KeepRecent *int    `json:"keep_recent,omitempty"`
	Summarizer *string `json:"summarizer,omitempty"`
}

// CompactResponse is the body of POST /v1/sessions/{id}/compact: what the
// compaction changed in the working set. The log keeps every step it took
// out.
type CompactResponse struct {
	// Changed is false when the strategy left the working set as it was
	// (nothing was written).
	Changed bool `json:"changed"`
	// Removed are the numbers of the steps that left the working set.
	Removed []int `json:"removed"`
	// Replaced are the numbers of the steps now in the working set as
	// modified copies (truncated observations).
	Replaced []int `json:"replaced"`
	// Added are the numbers of the new steps (summaries).
	Added []int `json:"added"`
	// Summary is the text of the summary added, if any.
	Summary string `json:"summary,omitempty"`
	// Before and After are the sizes of the working set.
	Before int `json:"before"`
	After  int `json:"after"`
	// LastSeq is the session's last sequence number after the compaction.
	LastSeq int64 `json:"last_seq"`
}
