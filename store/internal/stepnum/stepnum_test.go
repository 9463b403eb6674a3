package stepnum

import (
	"testing"

	"github.com/agentmem/agentmem"
)

func TestFind(t *testing.T) {
	for _, c := range []struct {
		enc, kind, num string // num "" when Find reports false
	}{
		{`{"type":"action","number":12,"id":"a"}`, "action", "12"},
		{`{"type":"task","number":0}`, "task", "0"},
		{`{"type":"task","number":-3,"x":1}`, "task", "-3"},
		{`{"type":"task","number":7`, "task", ""},            // cut short
		{`{"type":"task","number":,"x":1}`, "task", ""},      // no digits
		{`{"type":"task","number":-}`, "task", ""},           // a sign alone
		{`{"type":"task","number":1.5}`, "task", ""},         // not an integer
		{`{"type":"action","number":1}`, "task", ""},         // another kind
		{`{"type":"task","id":"a","number":1}`, "task", ""},  // another order
		{`{"type":"task"}`, "task", ""},                      // no number
		{`{"type":"task","number":1}`, "task_long_kind", ""}, // shorter than the prefix
		{``, "task", ""},
	} {
		i, j, ok := Find([]byte(c.enc), agentmem.StepKind(c.kind))
		if ok != (c.num != "") || ok && c.enc[i:j] != c.num {
			t.Errorf("Find(%s, %q) = %d, %d, %v; want the number %q", c.enc, c.kind, i, j, ok, c.num)
		}
		if ok && c.enc[:i] != `{"type":"`+c.kind+`","number":` {
			t.Errorf("Find(%s, %q): the head is %q", c.enc, c.kind, c.enc[:i])
		}
	}
}
