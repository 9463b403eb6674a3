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
	// Summary pins the newest summary of the working set: it stands for
	// everything older than the steps a context shows, so dropping it
	// first would leave the model with neither the old steps nor their
	// summary. A new summary folds the older ones in (see Summarize).
	Summary bool `json:"summary"`
}

// DefaultPinning pins every system prompt, the first task and the newest
// summary: the pinning of a Memory whose Options.Pinning is nil.
var DefaultPinning = Pinning{SystemPrompts: true, FirstTask: true, Summary: true}

// ChatPinning pins every system prompt and the newest summary: what a chat
// wants, whose first user message is one question among many rather than
// the task of a run.
var ChatPinning = Pinning{SystemPrompts: true, Summary: true}

// Flags applies the pinning to the kinds of a list of steps, in order,
// and reports which are pinned.
func (p Pinning) Flags(kinds []StepKind) []bool {
	flags := make([]bool, len(kinds))
	seenTask := false
	for i, k := range kinds {
		switch k {
		case KindSystemPrompt:
			flags[i] = p.SystemPrompts
		case KindTask:
			flags[i] = p.Tasks || (p.FirstTask && !seenTask)
			seenTask = true
		}
	}
	return flags
}

// pinsKind reports whether a step of kind k appended to a working set is
// pinned; hasTask says whether the working set already has a task (with
// FirstTask, whether it has a pinned one).
func (p Pinning) pinsKind(k StepKind, hasTask bool) bool {
	switch k {
	case KindSystemPrompt:
		return p.SystemPrompts
	case KindTask:
		return p.Tasks || (p.FirstTask && !hasTask)
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

// indexes returns the indexes of the pinned entries, ascending.
func (p Pinning) indexes(entries []*entry) []int {
	kinds := make([]StepKind, len(entries))
	for i, e := range entries {
		kinds[i] = e.step.Kind()
	}
	var idx []int
	for i, pinned := range p.Flags(kinds) {
		if pinned {
			idx = append(idx, i)
		}
	}
	return idx
}
