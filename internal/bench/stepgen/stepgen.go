// Package stepgen generates realistic agent steps and traces, the input of
// agentmem-bench's load runs and of the recall index's benchmarks.
package stepgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
)

// Gen generates realistic agent steps, as steps or as the core's step
// JSON: a system prompt of about 2,000 characters, a task of about 300,
// then actions. An action has 200-500 characters of reasoning, one tool
// call, and a result of log-normal length around 1,500 characters, 3% of
// 10,000-30,000. Results mix prose, JSON, code, stack traces and shell
// output.
// It is deterministic for a seed.
type Gen struct {
	r *mrand.Rand
}

// New returns a generator whose steps depend only on seed.
func New(seed uint64) *Gen {
	return &Gen{r: mrand.New(mrand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

var (
	genWords = strings.Fields(`the a an of to in and or for with on at by from as is are was were be been
		this that these those it its into over under after before while when then file function module
		package request response error value result config service handler client server cache index query
		record field schema table user agent memory token budget context message history step tool call
		output returns raises expects missing invalid timeout retry connection database repository branch
		commit build test suite case failure passed failed skipped latency throughput worker queue batch
		stream buffer pointer slice map struct interface method receiver goroutine channel mutex lock
		deadlock race panic should could would must may might will can cannot does not did has have had
		because however therefore although instead otherwise finally currently first second next last new
		old large small empty full valid stale fresh update delete insert select create remove rename move
		copy parse encode decode compute check verify confirm inspect investigate reproduce fix patch
		revert upstream downstream dependency version release migration deployment cluster node pod
		container image volume network port address host path directory line column offset length size
		count total average median percentile customer order invoice payment account balance transaction
		ledger report document section paragraph summary note warning deprecated legacy experimental`)
	genIdents = strings.Fields(`ctx req resp err cfg buf idx key val msg msgs tok toks n i j k state store
		cache client conn row rows tx opts result results item items budget limit offset total count node
		parent child head tail entry entries batch payload`)
	genFuncs = strings.Fields(`LoadConfig ParseRequest handleMessage renderContext countTokens appendStep
		trimHistory fetchUser writeRecord openStore flushBuffer compactLog validateSchema resolvePath
		runMigration encodeFrame decodeFrame process_batch load_fixture build_index apply_patch
		retry_with_backoff getSession updateCache serializeState`)
	genTools = []string{"read_file", "run_shell", "search_code", "http_get", "list_dir",
		"write_file", "run_tests", "grep", "query_db", "browse_page"}
)

func (g *Gen) pick(list []string) string { return list[g.r.IntN(len(list))] }
func (g *Gen) between(lo, hi int) int    { return lo + g.r.IntN(hi-lo+1) }

func (g *Gen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.IntN(16)]
	}
	return string(b)
}

func (g *Gen) path() string {
	parts := []string{g.pick([]string{"src", "pkg", "internal", "lib", "cmd", "app", "tests", "docs"})}
	for range g.between(1, 3) {
		parts = append(parts, g.pick(genIdents))
	}
	return strings.Join(parts, "/") + g.pick([]string{".go", ".py", ".ts", ".js", ".md", ".json", ".yaml", ".sql"})
}

func (g *Gen) sentence() string {
	n := g.between(6, 22)
	ws := make([]string, 0, n+3)
	for range n {
		ws = append(ws, g.pick(genWords))
	}
	if g.r.Float64() < 0.25 {
		ws = append(ws, "`"+g.pick(genFuncs)+"`")
	}
	if g.r.Float64() < 0.15 {
		ws = append(ws, strconv.Itoa(g.r.IntN(100000)))
	}
	if g.r.Float64() < 0.10 {
		ws = append(ws, g.path())
	}
	g.r.Shuffle(len(ws), func(i, j int) { ws[i], ws[j] = ws[j], ws[i] })
	s := strings.Join(ws, " ")
	return strings.ToUpper(s[:1]) + s[1:] + g.pick([]string{".", ".", ".", "?", "!", ";", ":"})
}

// text returns about n characters of one kind of tool output.
func (g *Gen) text(kind string, n int) string {
	var b strings.Builder
	lineNo := g.between(1, 400)
	for b.Len() < n {
		switch kind {
		case "prose":
			for range g.between(2, 6) {
				b.WriteString(g.sentence())
				b.WriteByte(' ')
			}
			b.WriteString("\n\n")
		case "json":
			fmt.Fprintf(&b, `{"id": %d, "uuid": "%s-%s-%s", "name": %q, "status": %q, "score": %.3f, "created_at": "2025-%02d-%02dT%02d:%02d:00Z", "path": %q},`+"\n",
				g.r.IntN(10_000_000), g.hex(8), g.hex(4), g.hex(12), g.pick(genWords)+" "+g.pick(genWords),
				g.pick([]string{"ok", "pending", "failed", "archived", "active"}), g.r.Float64()*100,
				g.between(1, 12), g.between(1, 28), g.r.IntN(24), g.r.IntN(60), g.path())
		case "code":
			f, x, y := g.pick(genFuncs), g.pick(genIdents), g.pick(genIdents)
			line := g.pick([]string{
				fmt.Sprintf("func (s *Store) %s(%s context.Context, %s []byte) (int, error) {", f, x, y),
				"\tif err != nil {", fmt.Sprintf("\t\treturn 0, fmt.Errorf(\"%s: %%w\", err)", f), "\t}",
				fmt.Sprintf("\t%s := make(map[string]int, %d)", x, g.between(1, 256)),
				fmt.Sprintf("\tfor %s, %s := range s.%s {", x, y, g.pick(genIdents)),
				"\t// " + g.sentence(), "\ts.mu.Lock()", "\tdefer s.mu.Unlock()",
			})
			fmt.Fprintf(&b, "%5d  %s\n", lineNo, line)
			lineNo++
		case "stack":
			fmt.Fprintf(&b, "Traceback (most recent call last):\n")
			for range g.between(3, 9) {
				fmt.Fprintf(&b, "  File \"/app/%s\", line %d, in %s\n    %s = %s(%s)\n", g.path(), g.between(1, 2000),
					strings.ToLower(g.pick(genFuncs)), g.pick(genIdents), strings.ToLower(g.pick(genFuncs)), g.pick(genIdents))
			}
			fmt.Fprintf(&b, "%s: %s\n", g.pick([]string{"KeyError", "ValueError", "TypeError", "TimeoutError"}), g.sentence())
		default: // shell
			switch g.r.IntN(4) {
			case 0:
				fmt.Fprintf(&b, "-rw-r--r-- 1 ci staff %8d Nov %2d %02d:%02d %s\n", g.r.IntN(1_000_000), g.between(1, 30), g.r.IntN(24), g.r.IntN(60), g.path())
			case 1:
				fmt.Fprintf(&b, "%s Test%s (%.2fs)\n", g.pick([]string{"--- PASS:", "--- FAIL:", "ok  ", "PASSED", "FAILED"}), g.pick(genFuncs), g.r.Float64()*3)
			case 2:
				fmt.Fprintf(&b, "%s:%d:%d: %s\n", g.path(), g.between(1, 900), g.between(1, 80), g.sentence())
			default:
				fmt.Fprintf(&b, "[%s] %s %s\n", g.pick([]string{"INFO", "WARN", "ERROR", "DEBUG"}), g.hex(12), g.sentence())
			}
		}
	}
	s := b.String()
	return s[:n]
}

// observationLen draws the length of a tool result.
func (g *Gen) observationLen() int {
	if g.r.Float64() < 0.03 {
		return g.between(10_000, 30_000)
	}
	x := math.Exp(g.r.NormFloat64()*0.75 + math.Log(1500))
	return int(min(9500, max(80, x)))
}

func (g *Gen) observation(n int) string {
	kinds := []string{"prose", "json", "code", "stack", "shell"}
	var parts []string
	size := 0
	for size < n {
		chunk := min(n-size, max(200, int(float64(n)*(0.3+0.7*g.r.Float64()))))
		t := g.text(g.pick(kinds), chunk)
		parts = append(parts, t)
		size += len(t) + 2
	}
	return strings.Join(parts, "\n\n")
}

// CallID returns a new tool call ID.
func (g *Gen) CallID() string { return "call_" + g.hex(24) }

// SystemPromptJSON returns a system prompt step's JSON (see SystemPrompt).
func (g *Gen) SystemPromptJSON() []byte { return mustJSON(g.SystemPrompt()) }

// TaskJSON returns a task step's JSON (see Task).
func (g *Gen) TaskJSON() []byte { return mustJSON(g.Task()) }

// ActionJSON returns an action step's JSON (see Action).
func (g *Gen) ActionJSON(callID string) []byte { return mustJSON(g.Action(callID)) }

// SystemPrompt returns a system prompt of about 2,000 characters.
func (g *Gen) SystemPrompt() *agentmem.SystemPromptStep {
	var b strings.Builder
	b.WriteString("You are a careful autonomous software engineering agent working inside a sandboxed repository. Follow these rules strictly.\n\n")
	for i := 1; b.Len() < 1900; i++ {
		fmt.Fprintf(&b, "%d. %s\n", i, g.sentence())
	}
	b.WriteString("\nAvailable tools: " + strings.Join(genTools, ", ") + ".")
	return &agentmem.SystemPromptStep{Content: b.String()}
}

// Task returns a task of 300 characters.
func (g *Gen) Task() *agentmem.TaskStep {
	t := "Task:"
	for len(t) < 300 {
		t += " " + g.sentence()
	}
	return &agentmem.TaskStep{Task: strings.TrimSpace(t[:300])}
}

// Action returns an action step: reasoning, one tool call with the given
// ID, and its result.
func (g *Gen) Action(callID string) *agentmem.ActionStep {
	reasoning := ""
	for target := g.between(200, 500); len(reasoning) < target; {
		reasoning += g.sentence() + " "
	}
	args := fmt.Sprintf(`{"path":%q,"query":%q,"request_id":"req_%s"}`, g.path(), g.pick(genFuncs)+" "+g.pick(genWords), g.hex(12))
	return &agentmem.ActionStep{
		ModelOutput: strings.TrimSpace(reasoning),
		ToolCalls:   []agentmem.ToolCall{{ID: callID, Name: g.pick(genTools), Arguments: args}},
		Results:     []agentmem.ToolResult{{CallID: callID, Content: g.observation(g.observationLen())}},
	}
}

// mustJSON encodes a step as the core does; the steps above always
// encode.
func mustJSON(s agentmem.Step) []byte {
	data, err := agentmem.MarshalStep(s)
	if err != nil {
		panic(err)
	}
	return data
}

// WriteTrace writes the messages of a generated run to w, one OpenAI-format
// chat message as JSON a line: a system prompt, a task, then steps
// actions, each an assistant message with one tool call and the tool's
// result. The same steps and seed always write the same bytes.
func WriteTrace(w io.Writer, steps int, seed uint64) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	g := New(seed)
	write := func(s agentmem.Step) error {
		for _, m := range s.Messages(agentmem.RenderOptions{}) {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write(g.SystemPrompt()); err != nil {
		return err
	}
	if err := write(g.Task()); err != nil {
		return err
	}
	for range steps {
		if err := write(g.Action(g.CallID())); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the trace: %w", err)
	}
	return nil
}
