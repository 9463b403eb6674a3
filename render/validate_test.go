package render_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/render"
)

// Shorthands for building message lists.
func sys(s string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(s)}
}
func user(s string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Text(s)}
}
func asst(s string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleAssistant, Content: agentmem.Text(s)}
}
func calls(ids ...string) agentmem.Message {
	m := agentmem.Message{Role: agentmem.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, agentmem.ToolCall{ID: id, Name: "f", Arguments: "{}"})
	}
	return m
}
func tool(id string) agentmem.Message {
	return agentmem.Message{Role: agentmem.RoleTool, ToolCallID: id, Content: agentmem.Text("r")}
}
func uses(ids ...string) agentmem.Message {
	m := agentmem.Message{Role: agentmem.RoleAssistant}
	for _, id := range ids {
		m.Content = append(m.Content, agentmem.Part{Type: agentmem.PartToolUse, ToolCall: &agentmem.ToolCall{ID: id, Name: "f"}})
	}
	return m
}
func results(ids ...string) agentmem.Message {
	m := agentmem.Message{Role: agentmem.RoleUser}
	for _, id := range ids {
		m.Content = append(m.Content, agentmem.Part{Type: agentmem.PartToolResult, ToolCallID: id, Text: "r"})
	}
	return m
}
func withParts(m agentmem.Message, parts ...agentmem.Part) agentmem.Message {
	m.Content = append(append(agentmem.Content{}, m.Content...), parts...)
	return m
}

var img = agentmem.ImagePart(agentmem.Image{URL: "https://x.test/i.png"})

type validateCase struct {
	name string
	msgs []agentmem.Message
	bad  string // "" for valid; else the error's field and a fragment of its reason, "field: fragment"
}

func runValidate(t *testing.T, format string, tests []validateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := render.Validate(format, tt.msgs)
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if !errors.Is(err, agentmem.ErrInvalid) {
				t.Fatalf("want an ErrInvalid error (%s), got %v", tt.bad, err)
			}
			var ie *agentmem.InvalidError
			errors.As(err, &ie)
			field, why, _ := strings.Cut(tt.bad, ": ")
			if ie.Field != field || !strings.Contains(ie.Reason, why) {
				t.Fatalf("got %q: %q\nwant %q: ...%q...", ie.Field, ie.Reason, field, why)
			}
		})
	}
}

func TestValidateOpenAI(t *testing.T) {
	runValidate(t, "openai", []validateCase{
		{"empty", nil, ""},
		{"plain chat", []agentmem.Message{sys("s"), user("u"), asst("a"), user("u")}, ""},
		{"repeated system and same roles", []agentmem.Message{sys("s"), user("u"), sys("t"), user("v"), user("w")}, ""},
		{"calls answered in any order", []agentmem.Message{user("u"), calls("a", "b"), tool("b"), tool("a"), asst("done")}, ""},
		{"image in user", []agentmem.Message{withParts(user("u"), img)}, ""},
		{"tool without call", []agentmem.Message{user("u"), tool("a")}, "messages[1]: answers no unanswered tool call"},
		{"tool answers twice", []agentmem.Message{calls("a"), tool("a"), tool("a")}, "messages[2]: answers no unanswered"},
		{"tool answers an older call", []agentmem.Message{calls("a"), tool("a"), calls("b"), tool("b"), asst("x"), tool("a")}, "messages[5]: answers no"},
		{"call unanswered before next message", []agentmem.Message{calls("a", "b"), tool("a"), user("u")}, `messages[2]: tool calls "b" of an earlier`},
		{"call never answered", []agentmem.Message{user("u"), calls("a")}, `messages[1]: tool calls "a" are never answered`},
		{"agent role", []agentmem.Message{{Role: agentmem.RoleAgentCall, Content: agentmem.Text("x")}}, "messages[0]: not an OpenAI chat role"},
		{"tool_use part", []agentmem.Message{uses("a")}, "messages[0]: tool_use part"},
		{"image in assistant", []agentmem.Message{withParts(asst("a"), img)}, "messages[0]: content[1] is an image in a message of role assistant; images are allowed only in user messages"},
		{"image in tool", []agentmem.Message{calls("a"), withParts(tool("a"), img)}, "messages[1]: content[1] is an image in a message of role tool; images are allowed only in user messages"},
		{"message invalid on its own", []agentmem.Message{{Role: agentmem.RoleTool}}, "messages[0].tool_call_id: required"},
		{"bad utf-8", []agentmem.Message{user("\xff")}, "messages[0].content[0].text: UTF-8"},
	})
}

func TestValidateAnthropic(t *testing.T) {
	runValidate(t, "anthropic", []validateCase{
		{"empty", nil, ""},
		{"system only", []agentmem.Message{sys("s")}, ""},
		{"alternation with tools", []agentmem.Message{sys("s"), user("u"), withParts(asst("a"), uses("x", "y").Content...),
			withParts(results("y", "x"), agentmem.TextPart("obs")), asst("ok")}, ""},
		{"no system", []agentmem.Message{user("u"), asst("a")}, ""},
		{"images in a tool_result", []agentmem.Message{user("u"), uses("a"), {Role: agentmem.RoleUser, Content: agentmem.Content{
			{Type: agentmem.PartToolResult, ToolCallID: "a", Images: []agentmem.Image{{URL: "https://x.test/i.png"}}}}}}, ""},
		{"tool_result image without source", []agentmem.Message{user("u"), uses("a"), {Role: agentmem.RoleUser, Content: agentmem.Content{
			{Type: agentmem.PartToolResult, ToolCallID: "a", Images: []agentmem.Image{{Detail: "low"}}}}}}, "messages[2].content[0].images[0]: needs a URL or data"},
		{"second system", []agentmem.Message{sys("s"), user("u"), sys("t")}, "messages[2]: system message after the start"},
		{"system not first", []agentmem.Message{user("u"), sys("s")}, "messages[1]: system message after the start"},
		{"system with image", []agentmem.Message{withParts(sys("s"), img)}, "messages[0].content[1]: images are accepted in user, assistant and tool messages, not system"},
		{"first is assistant", []agentmem.Message{sys("s"), asst("a")}, "messages[1]: must be a user message"},
		{"two users", []agentmem.Message{user("u"), user("v")}, "messages[1]: follows another user message"},
		{"two assistants", []agentmem.Message{user("u"), asst("a"), asst("b")}, "messages[2]: follows another assistant"},
		{"tool role", []agentmem.Message{user("u"), calls("a"), tool("a")}, "messages[1]: has tool_calls"},
		{"tool_call_id", []agentmem.Message{{Role: agentmem.RoleUser, ToolCallID: "a", Content: agentmem.Text("x")}}, "messages[0]: has a tool_call_id"},
		{"agent role", []agentmem.Message{{Role: agentmem.RoleAgentResponse, Content: agentmem.Text("x")}}, `messages[0]: role "agent_response" is not an Anthropic role`},
		{"empty content", []agentmem.Message{{Role: agentmem.RoleUser}}, "messages[0]: has no content"},
		{"blank text", []agentmem.Message{user(" \n")}, "messages[0]: content[0]: text parts must not be empty"},
		{"tool_use not answered", []agentmem.Message{user("u"), uses("a"), user("v")}, `messages[2]: does not answer tool_use "a"`},
		{"tool_use partly answered", []agentmem.Message{user("u"), uses("a", "b"), results("b")}, `messages[2]: does not answer tool_use "a"`},
		{"tool_use last", []agentmem.Message{user("u"), uses("a")}, `messages[1]: tool_use "a" is never answered`},
		{"result without use", []agentmem.Message{user("u"), asst("a"), results("x")}, `messages[2]: content[0]: tool_result for "x" answers no`},
		{"result answers an older use", []agentmem.Message{user("u"), uses("a"), results("a"), uses("b"), withParts(results("b"), results("a").Content...)}, `messages[4]: content[1]: tool_result for "a"`},
		{"result after text", []agentmem.Message{user("u"), uses("a"), withParts(user("note"), results("a").Content...)}, "messages[2]: content[1]: tool_result parts must come before"},
		{"tool_use in user", []agentmem.Message{withParts(user("u"), uses("a").Content...)}, "messages[0]: content[1]: a tool_use part in a user"},
		{"tool_result in assistant", []agentmem.Message{user("u"), results("a")}, "messages[1]: follows another user"},
		{"tool_result in assistant message", []agentmem.Message{user("u"), {Role: agentmem.RoleAssistant, Content: results("a").Content}}, "messages[1]: content[0]: a tool_result part in an assistant"},
		{"duplicate tool_use id", []agentmem.Message{user("u"), uses("a"), results("a"), uses("a"), results("a")}, `messages[3]: content[0]: tool_use ID "a" is used twice`},
		{"tool_use without name", []agentmem.Message{user("u"), {Role: agentmem.RoleAssistant, Content: agentmem.Content{{Type: agentmem.PartToolUse, ToolCall: &agentmem.ToolCall{ID: "a"}}}}}, "messages[1]: content[0]: a tool_use part needs an ID and a name"},
		{"image in assistant", []agentmem.Message{user("u"), withParts(asst("a"), img)}, "messages[1]: content[1] is an image in a message of role assistant; images are allowed only in user messages"},
		{"final assistant ends in space", []agentmem.Message{user("u"), asst("a\n")}, "messages[1]: must not end in whitespace"},
		{"non-final assistant may end in space", []agentmem.Message{user("u"), asst("a\n"), user("v")}, ""},
	})
}

func TestValidateObservation(t *testing.T) {
	runValidate(t, "observation", []validateCase{
		{"plain", []agentmem.Message{sys("s"), user("u"), asst("Action: f {}"), user("Observation: r"), user("more")}, ""},
		{"tool role", []agentmem.Message{user("u"), tool("a")}, "messages[1]: observation format has no tool role"},
		{"tool calls", []agentmem.Message{user("u"), calls("a")}, "messages[1]: has tool_calls"},
		{"tool_call_id", []agentmem.Message{{Role: agentmem.RoleUser, ToolCallID: "a", Content: agentmem.Text("x")}}, "messages[0]: has a tool_call_id"},
		{"tool_use part", []agentmem.Message{uses("a")}, "messages[0]: tool_use part"},
		{"agent role", []agentmem.Message{{Role: agentmem.RoleAgentCall, Content: agentmem.Text("x")}}, "messages[0]: not a chat role"},
		{"image in system", []agentmem.Message{withParts(sys("s"), img)}, "messages[0].content[1]: images are accepted in user, assistant and tool messages, not system"},
	})
}

func TestValidateUnknownFormat(t *testing.T) {
	if err := render.Validate("gemini", nil); !errors.Is(err, agentmem.ErrInvalid) {
		t.Fatalf("got %v", err)
	}
}
