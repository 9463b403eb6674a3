package agentmem

// Pinning chooses the steps a Memory pins: the steps Memory.Context always
// shows whatever the budget, and the built-in strategies keep (see
// Env.Pinned). The zero value pins nothing, as the seeds'
// manage_token_limit(preserve_system=False): every step then competes for
// the budget, newest first. DefaultPinning, what a Memory uses when
// Options.Pinning is nil, suits an agent run: its instructions and its
// task are never dropped.
//
// A chat usually wants Pinning{SystemPrompts: true}: with the default, its
// first user message is pinned for as long as the conversation lasts.
type Pinning struct {
	// SystemPrompts pins every system prompt.
	SystemPrompts bool `json:"system_prompts"`
	// FirstTask pins the first task of the working set: an agent run's
	// task, a chat's first user message.
	FirstTask bool `json:"first_task"`
	// Tasks pins every task, as seed 002's keep_last_n_steps keeps every
	// SystemPromptStep and TaskStep.
	Tasks bool `json:"tasks"`
	// Summary pins the newest summary of the working set. It stands for
	// everything older than the steps a context shows, so dropping it first
	// would leave the model with neither the old steps nor their summary. A
	// new summary folds the older ones in (see Summarize).
	Summary bool `json:"summary"`
}

// DefaultPinning pins every system prompt, the first task and the newest
// summary: the pinning of a Memory whose Options.Pinning is nil.
var DefaultPinning = Pinning{SystemPrompts: true, FirstTask: true, Summary: true}

// ChatPinning pins every system prompt and the newest summary. That is
// what a chat wants, whose first user message is one question among many
// rather than the task of a run.
var ChatPinning = Pinning{SystemPrompts: true, Summary: true}

// Flags applies the pinning to the kinds of a list of steps, in order,
// and reports which are pinned.
func (p Pinning) Flags(kinds []StepKind) []bool {
	flags := make([]bool, len(kinds))
	seenTask := false
	summary := -1
	for i, k := range kinds {
		switch k {
		case KindSystemPrompt:
			flags[i] = p.SystemPrompts
		case KindTask:
			flags[i] = p.Tasks || (p.FirstTask && !seenTask)
			seenTask = true
		case KindSummary:
			summary = i
		}
	}
	if summary >= 0 {
		flags[summary] = p.Summary
	}
	return flags
}

// pinsKind reports whether a step of kind k appended to a working set is
// pinned. hasTask says whether the working set already has a task; with
// FirstTask, whether it has a pinned one. A summary appended is the
// newest, so Summary pins it.
func (p Pinning) pinsKind(k StepKind, hasTask bool) bool {
	switch k {
	case KindSystemPrompt:
		return p.SystemPrompts
	case KindTask:
		return p.Tasks || (p.FirstTask && !hasTask)
	case KindSummary:
		return p.Summary
	}
	return false
}

// stepFlags is Flags for a list of steps.
func (p Pinning) stepFlags(steps []Step) []bool {
	kinds := make([]StepKind, len(steps))
	for i, s := range steps {
		kinds[i] = s.Kind()
	}
	return p.Flags(kinds)
}

// StartsTurn reports whether s starts a turn. A turn is a user's message
// (a task, or a message step from the user or another agent's call) and
// every step up to the next one. Contexts keep or drop the turns of a chat
// whole, so that the model never sees an answer without its question (see
// Memory.Context).
func StartsTurn(s Step) bool {
	switch s := s.(type) {
	case *TaskStep:
		return true
	case *MessageStep:
		return s.Message.Role == RoleUser || s.Message.Role == RoleAgentCall
	}
	return false
}

// layout indexes a working set for fitting: its pinned entries, its
// pending actions and the entries that start turns, each ascending. A
// memory keeps it up to date as steps are appended, so that fitting a
// context costs what it shows, not the length of the history.
type layout struct {
	pinned  []int
	waiting []int // pending actions (ActionStep.Pending)
	turns   []int // entries that start a turn (StartsTurn)
}

// layoutOf indexes entries under pinning p.
func (p Pinning) layoutOf(entries []*entry) layout {
	var l layout
	kinds := make([]StepKind, len(entries))
	for i, e := range entries {
		kinds[i] = e.step.Kind()
		if IsPending(e.step) {
			l.waiting = append(l.waiting, i)
		}
		if StartsTurn(e.step) {
			l.turns = append(l.turns, i)
		}
	}
	for i, pinned := range p.Flags(kinds) {
		if pinned {
			l.pinned = append(l.pinned, i)
		}
	}
	return l
}

// cursor answers, for indexes asked in decreasing order, whether each is
// in an ascending list. It takes time proportional to the indexes asked
// and the list's elements passed over. A copy saves its position.
type cursor struct {
	list []int
	k    int
}

func newCursor(list []int) cursor { return cursor{list: list, k: len(list) - 1} }

// has reports whether i is in the list; i must not exceed the index
// asked before.
func (c *cursor) has(i int) bool {
	for c.k >= 0 && c.list[c.k] > i {
		c.k--
	}
	return c.k >= 0 && c.list[c.k] == i
}

// last returns the largest element of the list not above i, or -1.
func (c *cursor) last(i int) int {
	for c.k >= 0 && c.list[c.k] > i {
		c.k--
	}
	if c.k < 0 {
		return -1
	}
	return c.list[c.k]
}
