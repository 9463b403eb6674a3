package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/agentmem/agentmem/examples/internal/scripted"
)

// newScriptedModel returns the endpoint of the built-in scripted model
// (package scripted), playing a new script.
func newScriptedModel() http.Handler { return scripted.New(newScript()) }

var celsius = regexp.MustCompile(`(?m)^\s*(paris|oslo): "?(-?\d+)°C`)

// newScript returns the script of the example's model: look up both
// cities, keep each temperature in the scratchpad, then answer from the
// scratchpad, which survives any pruning of the conversation. It counts
// the agent's turns, the requests that offer tools; one that offers none
// asks for a summary.
func newScript() scripted.Script {
	turn := 0
	return func(req scripted.Request) scripted.Reply {
		if len(req.Tools) == 0 {
			return scripted.Reply{Text: "Summary: the agent looked up weather and stored temperatures in its scratchpad."}
		}
		turn++
		return next(turn, req.Messages)
	}
}

// next is the agent's turn turn of the script.
func next(turn int, msgs []scripted.Message) scripted.Reply {
	task := ""
	for _, m := range msgs {
		if m.Role == "user" {
			task = m.Text()
			break
		}
	}
	if !strings.Contains(strings.ToLower(task), "weather") {
		return scripted.Reply{Text: "I can only demonstrate the weather task offline.", Tool: "final_answer", Arguments: `{"answer":"The scripted model only knows the weather task; set AGENTMEM_LLM_BASE_URL for a real model."}`}
	}
	switch turn {
	case 1:
		return scripted.Reply{Text: "First, Paris.", Tool: "get_weather", Arguments: `{"city":"Paris"}`}
	case 2:
		return scripted.Reply{Text: "Remember the Paris temperature.", Tool: "scratchpad_store", Arguments: `{"key":"paris","value":"18°C"}`}
	case 3:
		return scripted.Reply{Text: "Now Oslo.", Tool: "get_weather", Arguments: `{"city":"Oslo"}`}
	case 4:
		return scripted.Reply{Text: "Remember the Oslo temperature.", Tool: "scratchpad_store", Arguments: `{"key":"oslo","value":"9°C"}`}
	case 5:
		return scripted.Reply{Text: "Check a city without a station, to see an error handled.", Tool: "get_weather", Arguments: `{"city":"Atlantis"}`}
	}
	// Answer from the scratchpad note the agent sends along.
	temps := map[string]string{}
	for _, m := range msgs {
		if m.Role == "system" {
			for _, g := range celsius.FindAllStringSubmatch(m.Text(), -1) {
				temps[g[1]] = g[2]
			}
		}
	}
	if temps["paris"] == "" || temps["oslo"] == "" {
		return scripted.Reply{Tool: "final_answer", Arguments: `{"answer":"I lost track of the temperatures."}`}
	}
	answer := fmt.Sprintf("Paris is warmer: %s°C against %s°C in Oslo.", temps["paris"], temps["oslo"])
	return scripted.Reply{Text: "Both temperatures are in my scratchpad.", Tool: "final_answer", Arguments: fmt.Sprintf(`{"answer":%q}`, answer)}
}
