package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/internal/cli"
	"github.com/agentmem/agentmem/render"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/tokenizer"
	"github.com/spf13/cobra"
)

func init() { cli.Register(newInspectCmd) }

// inspectFlags are the flags of agentmem inspect.
type inspectFlags struct {
	store, tenant, format, tokenizer string
	budget                           int
	truncate, detail, json           bool
}

func newInspectCmd(a *cli.App) *cobra.Command {
	var f inspectFlags
	cmd := &cobra.Command{
		Use:   "inspect SESSION",
		Short: "Show a session as text: its steps and what the model would see",
		Long: `Inspect prints a session of the store as text: its metadata, then its
working set (what a memory resumed on the session holds: the steps the
newest compaction kept, summaries included, and every step after it) the
way Memory.Visualize draws it, one line per step with its number, kind and
token cost under --format and --tokenizer, the tools each action called and
the length of its observations. A "*" marks the pinned steps (the system
prompt and the first task), which every context keeps.

With --budget it also renders the context a model would be sent under that
many tokens, and says which steps it shows, which it drops, truncates or
replaces by summaries. --detail adds a preview of every step's messages.
--json prints the same as one JSON object instead: "session", "working_set"
(each step's number, kind, tokens, whether it is pinned, ...) and, with
--budget, "context" (the messages and which steps they show) or
"budget_error".

It only reads: the session is not changed (a single_run session is not
ended). Session IDs are per tenant: the session is looked up in --tenant
(the default tenant "" when it is not given); one that does not exist
there is an error (exit code 1).`,
		Example: `  agentmem inspect 0192f0c1-7d3e-7c4a-9a51-3b0e8f2d6a10
  agentmem inspect my-session --budget 8000 --format anthropic --tokenizer cl100k_base
  agentmem inspect my-session --detail --store sqlite:///var/lib/agentmem/agentmem.db
  AGENTMEM_TENANT=acme agentmem inspect my-session`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInspect(cmd.Context(), a, f, args[0], cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", storeFlagUsage)
	fl.StringVar(&f.tenant, "tenant", "", "the `TENANT` whose session it is (default: the default tenant \"\")")
	fl.StringVar(&f.format, "format", render.NameOpenAI, "count tokens as rendered in this format: openai, anthropic or observation")
	fl.StringVar(&f.tokenizer, "tokenizer", tokenizer.O200kBase, "the token counter: o200k_base, cl100k_base or heuristic")
	fl.IntVar(&f.budget, "budget", 0, "also show the context that fits `N` tokens (0: none)")
	fl.BoolVar(&f.truncate, "truncate", false, "with --budget, let the newest step that does not fit be shown truncated to fill the budget")
	fl.BoolVar(&f.detail, "detail", false, "add a preview of every step's messages")
	fl.BoolVar(&f.json, "json", false, "print one JSON object: the session, its working set step by step, and with --budget the context")
	return cmd
}

func runInspect(ctx context.Context, a *cli.App, f inspectFlags, id string, out io.Writer) error {
	format, err := render.ByName(f.format)
	if err != nil {
		return cli.Usagef("--format %q: %v", f.format, err)
	}
	counter, err := tokenizer.Get(f.tokenizer)
	if err != nil {
		return cli.Usagef("--tokenizer %q: %v", f.tokenizer, err)
	}
	if f.budget < 0 {
		return cli.Usagef("--budget must not be negative")
	}
	if f.truncate && f.budget == 0 {
		return cli.Usagef("--truncate needs --budget")
	}
	if f.json && f.detail {
		return cli.Usagef("--detail is for the text form: --json has every step already")
	}
	if err := store.ValidateID(id); err != nil {
		return cli.Usagef("SESSION %q: %v", id, err)
	}
	st, err := openSessionStore(ctx, a, f.store, true)
	if err != nil {
		return err
	}
	defer st.Close()
	// A bound memory loads the session's working set exactly as a resumed
	// run (and the server) does. It is only read: never closed, since
	// closing ends a single_run session.
	b, err := store.OpenTenantMemory(ctx, st, f.tenant, id, agentmem.Options{Format: format, Counter: counter})
	if err != nil {
		return sessionErr(id, err)
	}
	sess := b.Session()
	if f.json {
		return writeInspectJSON(ctx, out, b, sess, f)
	}
	ew := &inspectPrinter{w: out}
	writeSessionHeader(ew, sess)
	if ew.err != nil {
		return cli.Failure(ew.err)
	}
	if f.detail {
		err = b.Dump(out)
	} else {
		_, err = io.WriteString(out, b.Visualize())
	}
	if err != nil {
		return cli.Failure(err)
	}
	if f.budget > 0 {
		res, err := b.Context(ctx, agentmem.ContextOptions{Budget: f.budget, TruncateToFill: f.truncate})
		var be *agentmem.BudgetError
		switch {
		case errors.As(err, &be):
			ew.printf("Context at budget %s [%s, %s]: does not fit: the pinned system prompt and task need %s tokens\n",
				groupDigits(f.budget), format.Name(), counter.Name(), groupDigits(be.Required))
		case err != nil:
			return cli.Failure(err)
		default:
			writeContext(ew, res)
		}
	}
	if ew.err != nil {
		return cli.Failure(ew.err)
	}
	return nil
}

// inspectJSON is what inspect --json prints.
type inspectJSON struct {
	Session     *store.Session    `json:"session"`
	WorkingSet  agentmem.Overview `json:"working_set"`
	Context     *agentmem.Context `json:"context,omitempty"`
	BudgetError *budgetErrorJSON  `json:"budget_error,omitempty"`
}

// budgetErrorJSON says that a context does not fit its budget.
type budgetErrorJSON struct {
	Budget   int    `json:"budget"`
	Required int    `json:"required"`
	Message  string `json:"message"`
}

func writeInspectJSON(ctx context.Context, out io.Writer, b *store.Bound, sess *store.Session, f inspectFlags) error {
	v := inspectJSON{Session: sess, WorkingSet: b.Overview()}
	if f.budget > 0 {
		res, err := b.Context(ctx, agentmem.ContextOptions{Budget: f.budget, TruncateToFill: f.truncate})
		var be *agentmem.BudgetError
		switch {
		case errors.As(err, &be):
			v.BudgetError = &budgetErrorJSON{Budget: f.budget, Required: be.Required, Message: be.Error()}
		case err != nil:
			return cli.Failure(err)
		default:
			v.Context = res
		}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return cli.Failure(err)
	}
	return nil
}

// writeSessionHeader prints a session's metadata, one field a line.
func writeSessionHeader(ew *inspectPrinter, s *store.Session) {
	ew.printf("Session %s\n", s.ID)
	ew.printf("  tenant     %s\n", orDash(s.Tenant))
	ew.printf("  user       %s\n", orDash(s.UserID))
	ew.printf("  agent      %s\n", orDash(s.Agent))
	retention := string(s.Retention)
	if !s.ExpiresAt.IsZero() {
		retention += ", expires " + stamp(s.ExpiresAt)
	}
	ew.printf("  retention  %s\n", retention)
	ew.printf("  created    %s, updated %s\n", stamp(s.CreatedAt), stamp(s.UpdatedAt))
	log := "last seq " + strconv.FormatInt(s.LastSeq, 10)
	if s.ParentID != "" {
		log += fmt.Sprintf(", a branch of %s at seq %d", s.ParentID, s.ForkSeq)
	}
	ew.printf("  log        %s\n", log)
	if len(s.Metadata) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(s.Metadata)) {
			kv = append(kv, k+"="+strconv.Quote(s.Metadata[k]))
		}
		ew.printf("  metadata   %s\n", strings.Join(kv, " "))
	}
}

// writeContext prints what a context shows of the working set.
func writeContext(ew *inspectPrinter, c *agentmem.Context) {
	ew.printf("Context at budget %s [%s, %s]: %s tokens in %d messages, %d of %d steps shown\n",
		groupDigits(c.Budget), c.Format, c.Counter, groupDigits(c.Tokens), len(c.Messages), len(c.Steps), len(c.Steps)+c.DroppedSteps)
	ew.printf("  shown       %s\n", orDash(stepRuns(c.Steps)))
	if len(c.Dropped) > 0 {
		var runs []string
		for _, d := range c.Dropped {
			switch d.Count {
			case 1:
				runs = append(runs, fmt.Sprintf("#%d", d.First))
			case 2:
				runs = append(runs, fmt.Sprintf("#%d, #%d", d.First, d.Last))
			default:
				// Working-set order: the numbers need not be consecutive.
				runs = append(runs, fmt.Sprintf("#%d … #%d (%d steps)", d.First, d.Last, d.Count))
			}
		}
		ew.printf("  dropped     %s\n", strings.Join(runs, ", "))
	}
	if len(c.Truncated) > 0 {
		ew.printf("  truncated   %s\n", stepRuns(c.Truncated))
	}
	if len(c.Summarized) > 0 {
		var runs []string
		for _, r := range c.Summarized {
			runs = append(runs, runString(r.From, r.To))
		}
		ew.printf("  summarized  %s\n", strings.Join(runs, ", "))
	}
}

// stepRuns writes step numbers as runs of consecutive numbers: "#1-#3, #7".
func stepRuns(nums []int) string {
	var runs []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		runs = append(runs, runString(nums[i], nums[j]))
		i = j + 1
	}
	return strings.Join(runs, ", ")
}

func runString(from, to int) string {
	if from == to {
		return fmt.Sprintf("#%d", from)
	}
	return fmt.Sprintf("#%d-#%d", from, to)
}

// groupDigits writes n with thousands separators, as Visualize does.
func groupDigits(n int) string {
	if n < 0 {
		return "-" + groupDigits(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// openSessionStore opens the session store of --store (or AGENTMEM_STORE,
// or the default SQLite file) for inspect, export and import. A mem://
// store is refused: a new one is empty, and whatever is put in it is gone
// when the command exits. With readOnly, a missing SQLite file is an error
// rather than a new store.
func openSessionStore(ctx context.Context, a *cli.App, storeFlag string, readOnly bool) (*store.Store, error) {
	resolve := resolveStoreURL
	if readOnly {
		resolve = resolveExistingStoreURL
	}
	storeURL, err := resolve(a, storeFlag)
	if err != nil {
		return nil, err
	}
	if u, err := url.Parse(storeURL); err == nil && u.Scheme == "mem" {
		return nil, cli.Usagef("--store mem:// lives only as long as one command: give a sqlite:// or postgres:// store")
	}
	st, err := store.Open(ctx, storeURL)
	if err != nil {
		return nil, cli.Failure(err)
	}
	return st, nil
}

// sessionErr classifies an error about the session named on the command
// line: a missing one is a failure saying so, a bad ID a usage error.
func sessionErr(id string, err error) error {
	switch {
	case errors.Is(err, agentmem.ErrNotFound):
		return cli.Failure(fmt.Errorf("session %q not found", id))
	case errors.Is(err, agentmem.ErrInvalid):
		return cli.Usagef("SESSION %q: %v", id, err)
	}
	return cli.Failure(fmt.Errorf("session %q: %w", id, err))
}

// inspectPrinter keeps the first write error so printing code stays linear.
type inspectPrinter struct {
	w   io.Writer
	err error
}

func (e *inspectPrinter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
