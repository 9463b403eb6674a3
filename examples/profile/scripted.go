package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentmem/agentmem/examples/internal/scripted"
)

var (
	// humanBlock finds the human block in the system prompt, as
	// blocks.Render shows it.
	humanBlock = regexp.MustCompile(`(?s)<human chars="\d+/\d+">\n(.*?)</human>`)
	introduces = regexp.MustCompile(`(?i)\b(?:I'm|I am|my name is)\s+([A-Z][a-z]+)`)
	prefers    = regexp.MustCompile(`(?i)\bI prefer (.+?)[.!]*$`)
	nameLine   = regexp.MustCompile(`(?m)^Name: (\w+)\.$`)
	prefLine   = regexp.MustCompile(`(?m)^Prefers (.+)\.$`)
)

// script plays the example's part of a model, for the built-in scripted
// model (package scripted). It keeps no state between requests: like a
// real model it knows only what each request sends, so what it knows of
// the user across sessions is what the memory block in the system prompt
// says. On a user's message it records their name or a preference in the
// block (memory_append, memory_rethink) or answers a question from it;
// after a tool's result, it answers.
func script(req scripted.Request) scripted.Reply {
	msgs := req.Messages
	system, block := "", ""
	if msgs[0].Role == "system" {
		system = msgs[0].Text()
	}
	if m := humanBlock.FindStringSubmatch(system); m != nil {
		block = strings.TrimSuffix(m[1], "\n")
	}
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		result := last.Text()
		if strings.HasPrefix(result, "error:") {
			return scripted.Reply{Text: "I could not note that: " + result}
		}
		if m := nameLine.FindStringSubmatch(block); m != nil && !prefLine.MatchString(block) {
			return scripted.Reply{Text: fmt.Sprintf("Nice to meet you, %s! I will remember your name.", m[1])}
		}
		return scripted.Reply{Text: "Noted: I will keep that in mind."}
	}
	said := last.Text()
	switch {
	case introduces.MatchString(said):
		name := introduces.FindStringSubmatch(said)[1]
		if strings.Contains(block, "Name: "+name+".") {
			return scripted.Reply{Text: fmt.Sprintf("Welcome back, %s!", name)}
		}
		a, _ := json.Marshal(map[string]string{"label": "human", "text": "Name: " + name + "."})
		return scripted.Reply{Text: "I will note your name.", Tool: "memory_append", Arguments: string(a)}
	case prefers.MatchString(said):
		// Rewrite the block whole, from what it says now, to keep it
		// tidy: one line per thing known.
		value := strings.TrimSpace(block + "\nPrefers " + prefers.FindStringSubmatch(said)[1] + ".")
		a, _ := json.Marshal(map[string]string{"label": "human", "value": value})
		return scripted.Reply{Text: "I will note your preference.", Tool: "memory_rethink", Arguments: string(a)}
	case strings.Contains(strings.ToLower(said), "my name"):
		name := nameLine.FindStringSubmatch(block)
		if name == nil {
			return scripted.Reply{Text: "I don't know your name yet: you haven't told me."}
		}
		answer := "You are " + name[1]
		if pref := prefLine.FindStringSubmatch(block); pref != nil {
			answer += ", and you prefer " + pref[1] + ": take the train to Lisbon."
		} else {
			answer += "; I don't know how you like to travel."
		}
		return scripted.Reply{Text: answer}
	}
	return scripted.Reply{Text: "How can I help?"}
}
