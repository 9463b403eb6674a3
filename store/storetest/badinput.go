package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

// badSessionIDs are refused everywhere a session ID is taken: control
// characters (C0, DEL, C1), invalid UTF-8, "." and ".." (a URL path
// segment cannot hold them: clients do not escape dots, and paths are
// cleaned), and more than store.MaxIDLen bytes.
var badSessionIDs = []string{
	".", "..", "\tx", "x\x00", "x\n", "a\rb", "\x7f", "x\u0085", "\xff", "a\xc3",
	strings.Repeat("a", store.MaxIDLen+1), strings.Repeat("é", store.MaxIDLen/2) + "x",
}

// anySessionIDs are session IDs of any text, as conversation IDs are
// (user@example.com, a user's name): every backend takes them as they
// are, as keys and in pages of List.
var anySessionIDs = []string{
	"user@example.com", "Research Agent", "a/b", "../x", "./x", "/abs", `a\b`, " ", " x", "x ", "...",
	"-x", "_x", ":x", "ünï", "日本語 ✓", "%2e%2e", "%", "?q=1#frag&x", `"quoted"`, "x'; DROP TABLE sessions; --",
	"<script>alert(1)</script>", strings.Repeat("a", store.MaxIDLen), strings.Repeat("é", store.MaxIDLen/2),
}

func (s *suite) badInputTests() []namedTest {
	return []namedTest{
		{"DecodeStep", func(t *testing.T) {
			e := s.open(t)
			for _, raw := range []string{
				`{"type":"telepathy","number":1,"id":"x"}`,
				`{"number":1,"id":"x","task":"no type"}`,
				`{"type":"task","id":"x","task":"t","surprise":1}`,
				`{"type":"task","id":"x"}`,
				`{"type":"task","id":"x","task":null}`,
				`{"type":"task","id":"x","Task":"t"}`,
				`{"type":"task","id":"x","task":"t","Task":"u"}`,
				`{"type":"action","id":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f"}}],"results":[{"call_id":"c"}]}`,
				`{"type":"action","id":"x","results":[{"call_id":"c","content":"no call"}]}`,
				`{"type":"action","id":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}],"results":[{"call_id":"c","content":"r"},{"call_id":"c","content":"again"}]}`,
				`{"type":"task","id":"x","task":"t"} trailing`,
				`{"type":"task","id":"x","task":"` + "\xff" + `"}`,
				`not json`,
				``,
			} {
				_, err := store.DecodeStep([]byte(raw))
				e.wantErr(err, agentmem.ErrInvalid, fmt.Sprintf("DecodeStep(%q)", raw))
			}
		}},
		{"Steps", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "s"})
			e.appendSteps("s", steps("ok", 2)...)
			big := &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "big"}}
			labels := map[string]string{}
			for i := range store.MaxMetadataKeys {
				labels[fmt.Sprint("k", i)] = "v"
			}
			tooMany := maps.Clone(labels)
			tooMany["one more"] = "v"
			big.Task = fillTo(store.MaxStepBytes + 1 - len(e.numbered(big, 3)))
			cases := map[string]agentmem.Step{
				"tool result without its call": &agentmem.ActionStep{StepInfo: info("b1"), Results: []agentmem.ToolResult{{CallID: "ghost", Content: "x"}}},
				"a tool call without a name":   &agentmem.ActionStep{StepInfo: info("b2"), ToolCalls: []agentmem.ToolCall{{ID: "c"}}},
				"two results for one call": &agentmem.ActionStep{StepInfo: info("b3"), ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "f"}},
					Results: []agentmem.ToolResult{{CallID: "c"}, {CallID: "c"}}},
				"invalid UTF-8 in a task":         taskStep("b4", "bad \xff byte"),
				"invalid UTF-8 in a result":       &agentmem.ActionStep{StepInfo: info("b5"), ToolCalls: []agentmem.ToolCall{{ID: "c", Name: "f"}}, Results: []agentmem.ToolResult{{CallID: "c", Content: "\xc3\x28"}}},
				"invalid UTF-8 in a summary":      summaryStep("b6", "\xed\xa0\x80"),
				"invalid UTF-8 in a step ID":      taskStep("id-\xff", "x"),
				"a step over MaxStepBytes":        big,
				"a step without an ID":            taskStep("", "anonymous"),
				"a tool message as a step":        &agentmem.MessageStep{StepInfo: info("b7"), Message: agentmem.Message{Role: agentmem.RoleTool, ToolCallID: "c", Content: agentmem.Text("x")}},
				"an unknown message role":         &agentmem.MessageStep{StepInfo: info("b8"), Message: agentmem.Message{Role: "wizard"}},
				"a bad summary range":             summaryStep("b9", "x", agentmem.Range{From: 5, To: 2}),
				"a negative duration":             &agentmem.ActionStep{StepInfo: info("b10"), Duration: -time.Second},
				"a step ID over MaxFieldBytes":    taskStep(strings.Repeat("i", store.MaxFieldBytes+1), "x"),
				"an image without URL or data":    &agentmem.TaskStep{StepInfo: info("b11"), Images: []agentmem.Image{{Detail: "low"}}},
				"structured data that is no JSON": &agentmem.MessageStep{StepInfo: info("b12"), Message: agentmem.Message{Role: agentmem.RoleUser, Data: []byte("{")}},
				"too much step metadata":          &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "b13", Metadata: tooMany}, Task: "x"},
			}
			before := e.dump()
			for name, bad := range cases {
				_, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "s", Steps: []agentmem.Step{bad}})
				e.wantErr(err, agentmem.ErrInvalid, name)
				var inv *agentmem.InvalidError
				if !errors.As(err, &inv) {
					t.Fatalf("%s: error %v is not an *agentmem.InvalidError", name, err)
				}
				e.wantUnchanged(before, name)
			}
			// As much metadata as a step may have is fine.
			e.appendSteps("s", &agentmem.TaskStep{StepInfo: agentmem.StepInfo{ID: "m", Metadata: labels}, Task: "x"})
			before = e.dump()
			for name, req := range map[string]store.AppendRequest{
				"an empty request":           {SessionID: "s"},
				"a negative ExpectedLastSeq": {SessionID: "s", Steps: steps("n", 1), ExpectedLastSeq: ptr(int64(-1))},
			} {
				_, err := e.st.Append(e.ctx, req)
				e.wantErr(err, agentmem.ErrInvalid, name)
				e.wantUnchanged(before, name)
			}
		}},
		{"SessionIDs", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "good"})
			e.appendSteps("good", steps("g", 1)...)
			before := e.dump()
			for _, id := range badSessionIDs {
				what := fmt.Sprintf("session ID %q", id)
				_, err := e.st.Create(e.ctx, store.CreateRequest{ID: id})
				e.wantErr(err, agentmem.ErrInvalid, "Create with "+what)
				_, err = e.st.Create(e.ctx, store.CreateRequest{ParentID: id})
				e.wantErr(err, agentmem.ErrInvalid, "Create with parent "+what)
				_, err = e.st.Get(e.ctx, "", id)
				e.wantErr(err, agentmem.ErrInvalid, "Get of "+what)
				_, err = e.st.Read(e.ctx, store.ReadRequest{SessionID: id})
				e.wantErr(err, agentmem.ErrInvalid, "Read of "+what)
				_, err = e.st.Append(e.ctx, store.AppendRequest{SessionID: id, Steps: steps("x", 1)})
				e.wantErr(err, agentmem.ErrInvalid, "Append to "+what)
				e.wantErr(e.st.Delete(e.ctx, "", id), agentmem.ErrInvalid, "Delete of "+what)
				e.wantErr(store.ValidateID(id), agentmem.ErrInvalid, "ValidateID of "+what)
			}
			for _, f := range []func() error{
				func() error { _, err := e.st.Get(e.ctx, "", ""); return err },
				func() error { _, err := e.st.Read(e.ctx, store.ReadRequest{}); return err },
				func() error { _, err := e.st.Append(e.ctx, store.AppendRequest{Steps: steps("x", 1)}); return err },
				func() error { return e.st.Delete(e.ctx, "", "") },
			} {
				e.wantErr(f(), agentmem.ErrInvalid, "an empty session ID")
			}
			e.wantUnchanged(before, "calls with bad session IDs")
		}},
		{"AnySessionIDs", func(t *testing.T) {
			e := s.open(t)
			for i, id := range anySessionIDs {
				if err := store.ValidateID(id); err != nil {
					t.Fatalf("ValidateID(%q): %v", id, err)
				}
				if c := e.create(store.CreateRequest{ID: id, UserID: id, Agent: id}); c.ID != id {
					t.Fatalf("Create(%q) made %q", id, c.ID)
				}
				e.append(store.AppendRequest{SessionID: id, Steps: []agentmem.Step{taskStep(fmt.Sprint("s", i), "hello "+id)}})
				if g, err := e.st.Get(e.ctx, "", id); err != nil || g.ID != id || g.UserID != id || g.LastSeq != 1 {
					t.Fatalf("Get(%q) = %+v, %v", id, g, err)
				}
				r := e.read(store.ReadRequest{SessionID: id})
				if len(r.Entries) != 1 || r.Entries[0].Step.(*agentmem.TaskStep).Task != "hello "+id {
					t.Fatalf("Read(%q) = %+v", id, r.Entries)
				}
				// A branch of it.
				b := e.create(store.CreateRequest{ID: fmt.Sprint("branch ", i), ParentID: id})
				if b.ParentID != id || b.ForkSeq != 1 {
					t.Fatalf("the branch of %q: %s", id, sessionLine(b))
				}
			}
			// Each is its own key: no two are taken for one another, and
			// List pages through them (its page token carries the ID).
			var listed []string
			req := store.ListRequest{PageSize: 3}
			for {
				resp, err := e.st.List(e.ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range resp.Sessions {
					listed = append(listed, s.ID)
				}
				if resp.NextPageToken == "" {
					break
				}
				req.PageToken = resp.NextPageToken
			}
			var want []string
			for i, id := range anySessionIDs {
				want = append(want, id, fmt.Sprint("branch ", i))
			}
			slices.Sort(listed)
			slices.Sort(want)
			if !slices.Equal(listed, want) {
				t.Fatalf("List gave %q\nwant %q", listed, want)
			}
			for i, id := range anySessionIDs {
				if err := e.st.Delete(e.ctx, "", fmt.Sprint("branch ", i)); err != nil {
					t.Fatalf("Delete of the branch of %q: %v", id, err)
				}
				resp, err := e.st.List(e.ctx, store.ListRequest{UserID: id, Agent: id})
				if err != nil || len(resp.Sessions) != 1 || resp.Sessions[0].ID != id {
					t.Fatalf("List of user %q: %v %v", id, resp, err)
				}
				if err := e.st.Delete(e.ctx, "", id); err != nil {
					t.Fatalf("Delete(%q): %v", id, err)
				}
				if _, err := e.st.Get(e.ctx, "", id); !errors.Is(err, agentmem.ErrNotFound) {
					t.Fatalf("Get(%q) after Delete: %v", id, err)
				}
			}
		}},
		{"CreateFields", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "p"})
			many := map[string]string{}
			for i := range store.MaxMetadataKeys + 1 {
				many[fmt.Sprintf("k%d", i)] = "v"
			}
			long := strings.Repeat("x", store.MaxFieldBytes+1)
			before := e.dump()
			for name, req := range map[string]store.CreateRequest{
				"invalid UTF-8 tenant":         {Tenant: "\xff"},
				"invalid UTF-8 user":           {UserID: "u\xfe"},
				"NUL in tenant":                {Tenant: "a\x00b"},
				"invalid UTF-8 agent":          {Agent: "\xc0\xaf"},
				"invalid UTF-8 metadata value": {Metadata: map[string]string{"k": "\xff"}},
				"invalid UTF-8 metadata key":   {Metadata: map[string]string{"\xff": "v"}},
				"empty metadata key":           {Metadata: map[string]string{"": "v"}},
				"long tenant":                  {Tenant: long},
				"long user":                    {UserID: long},
				"long agent":                   {Agent: long},
				"long metadata key":            {Metadata: map[string]string{long: "v"}},
				"long metadata value":          {Metadata: map[string]string{"k": long}},
				"too many metadata keys":       {Metadata: many},
				"unknown retention":            {Retention: "forever-ish"},
				"negative TTL":                 {TTL: -time.Second},
				"TTL on a persistent session":  {Retention: store.Persistent, TTL: time.Hour},
				"fork point without parent":    {ForkSeq: 1},
				"negative fork point":          {ParentID: "p", ForkSeq: -2},
				"own parent":                   {ID: "self", ParentID: "self"},
			} {
				_, err := e.st.Create(e.ctx, req)
				e.wantErr(err, agentmem.ErrInvalid, name)
				e.wantUnchanged(before, name)
			}
			// The limits themselves are fine.
			ok := map[string]string{}
			for i := range store.MaxMetadataKeys {
				ok[fmt.Sprintf("k%d", i)] = strings.Repeat("v", store.MaxFieldBytes)
			}
			e.create(store.CreateRequest{ID: "limits", Tenant: long[1:], UserID: long[1:], Agent: long[1:], Metadata: ok})
			if got, err := e.st.Get(e.ctx, long[1:], "limits"); err != nil || len(got.Metadata) != store.MaxMetadataKeys || got.Tenant != long[1:] {
				t.Fatalf("session at the limits came back changed")
			}
		}},
		{"CanceledContext", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "c"})
			before := e.dump()
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			_, err := e.st.Append(ctx, store.AppendRequest{SessionID: "c", Steps: steps("x", 1)})
			e.wantErr(err, context.Canceled, "Append with a canceled context")
			_, err = e.st.Create(ctx, store.CreateRequest{ID: "d"})
			e.wantErr(err, context.Canceled, "Create with a canceled context")
			e.wantUnchanged(before, "calls with a canceled context")
		}},
		{"ExpiredContext", func(t *testing.T) {
			// A deadline that passed is a transient failure: the error
			// is the context's, marked agentmem.ErrUnavailable (retry
			// with more time), and nothing changes.
			e := s.open(t)
			e.create(store.CreateRequest{ID: "c"})
			before := e.dump()
			ctx, cancel := context.WithDeadline(e.ctx, time.Now().Add(-time.Second))
			defer cancel()
			for name, call := range map[string]func() error{
				"Append": func() error {
					_, err := e.st.Append(ctx, store.AppendRequest{SessionID: "c", Steps: steps("x", 1)})
					return err
				},
				"Create": func() error { _, err := e.st.Create(ctx, store.CreateRequest{ID: "d"}); return err },
				"Get":    func() error { _, err := e.st.Get(ctx, "", "c"); return err },
				"Read":   func() error { _, err := e.st.Read(ctx, store.ReadRequest{SessionID: "c"}); return err },
			} {
				err := call()
				e.wantErr(err, context.DeadlineExceeded, name+" with an expired context")
				e.wantErr(err, agentmem.ErrUnavailable, name+" with an expired context")
			}
			e.wantUnchanged(before, "calls with an expired context")
		}},
	}
}
