package bundle

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/views/recallview"
)

// Stores are what a bundle is exported from or imported into: the
// session store and, beside it, the long-term memories (in the same
// database, as agentmem serve opens them). A nil Facts, Blocks or Recall
// is a part the caller does not keep: Export leaves it out, and Import
// refuses a bundle that holds some of it.
type Stores struct {
	// Sessions is required. Import needs a store.Importer.
	Sessions *store.Store
	// Facts needs facts.Lister to export a whole tenant or every tenant,
	// and facts.Importer to import.
	Facts facts.Store
	// Blocks needs blocks.Lister to export a whole tenant or every
	// tenant, and blocks.Importer to import.
	Blocks blocks.Store
	// Recall needs a backend with a recall.Scanner to export.
	Recall *recall.Index
}

// Selection is what Export writes. Either name sessions, or select
// them with All, UserID or Agent (UserID and Agent together select a
// user's sessions with that agent).
//
// Named sessions, and an agent's, are written with their memory blocks.
// All and UserID (without Agent) write the long-term memories too. All
// writes every user's facts, every user's blocks and every document put
// into recall. UserID writes the user's facts and blocks and the
// documents whose metadata names the user (recall.MetaUser), as
// forget.User erases them.
// Recall documents derived from sessions (recallview.IsStepDoc) are never
// written: importing their sessions indexes them again.
type Selection struct {
	// Sessions names sessions of Tenant.
	Sessions []string
	All      bool
	UserID   string
	Agent    string
	// Tenant confines the selection to one tenant; empty means every
	// tenant, unless ExactTenant (as store.ListRequest's).
	Tenant      string
	ExactTenant bool
}

// memories reports whether the selection holds long-term memories.
func (s Selection) memories() bool { return s.All || s.UserID != "" && s.Agent == "" }

// ExportProgress is what ExportOptions.Progress is told: the part being
// written, and how far it is.
type ExportProgress struct {
	// Part is KindSession (sessions, with their blocks), KindFacts
	// (users' facts), KindBlock (users' blocks, by owner) or
	// KindDocument.
	Part string
	// Done counts what of the part is written; Total is how much there
	// is (-1: unknown).
	Done, Total int
}

// ExportOptions configures Export.
type ExportOptions struct {
	// Progress, when set, is called as the export advances: once when a
	// part starts (Done 0) and after each session, user, owner or
	// document written.
	Progress func(ExportProgress)
	// Now is the clock of the header's exported_at; nil means time.Now.
	Now func() time.Time
}

// ExportSummary is what an export wrote, and what it left out.
type ExportSummary struct {
	Counts
	// Bytes is the bundle's size.
	Bytes int64
	// Damaged are the records left out because their stored form does
	// not decode: selected sessions, facts, users' audit logs (the
	// user's facts are then left out too) and documents. The rest is
	// written.
	Damaged []*agentmem.DamagedError
}

// scanPage is how many documents Export reads at a time.
const scanPage = 500

// Export writes the bundle of what sel selects to w (see the package
// documentation for the format). Every session is found first: a named
// session that does not exist is an error wrapping agentmem.ErrNotFound,
// and nothing is written. A selected session deleted while the export
// runs is left out; damaged records are left out and returned in the
// summary. An error part way leaves w with a bundle without its end
// line, which Import refuses whole.
func Export(ctx context.Context, from Stores, sel Selection, w io.Writer, opts ExportOptions) (ExportSummary, error) {
	var sum ExportSummary
	if from.Sessions == nil {
		return sum, errors.New("bundle: export: Stores.Sessions is required")
	}
	named := len(sel.Sessions) > 0
	if named == (sel.All || sel.UserID != "" || sel.Agent != "") {
		return sum, &agentmem.InvalidError{Field: "selection", Reason: "name sessions, or select them with All, UserID or Agent, not both"}
	}
	if opts.Progress == nil {
		opts.Progress = func(ExportProgress) {}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	// Damaged records, each once: a list names them, and reports them
	// to ctx too.
	var mu sync.Mutex
	seen := map[[3]string]bool{}
	damaged := func(d *agentmem.DamagedError) {
		mu.Lock()
		defer mu.Unlock()
		if k := [3]string{d.Kind, d.Tenant, d.ID}; !seen[k] {
			seen[k] = true
			sum.Damaged = append(sum.Damaged, d)
		}
	}
	ctx = agentmem.WithDamageReporter(ctx, damaged)

	keys, err := sessionKeys(ctx, from.Sessions, sel, damaged)
	if err != nil {
		return sum, err
	}
	var tenants []string
	if sel.memories() {
		if tenants, err = memoryTenants(ctx, from, sel, keys); err != nil {
			return sum, err
		}
	}

	cw := &countingWriter{w: w}
	bw := &writer{w: bufio.NewWriterSize(cw, 256<<10)}
	info := Info{ExportedAt: now(), Tenant: sel.Tenant, AllTenants: sel.Tenant == "" && !sel.ExactTenant, All: sel.All, UserID: sel.UserID, Agent: sel.Agent}
	if named {
		info.AllTenants = false
	}
	if err := bw.header(info); err != nil {
		return sum, err
	}
	if err := exportSessions(ctx, from, keys, !named, bw, damaged, opts.Progress); err != nil {
		return sum, err
	}
	if sel.memories() {
		if err := exportFacts(ctx, from.Facts, sel, tenants, bw, damaged, opts.Progress); err != nil {
			return sum, err
		}
		if err := exportUserBlocks(ctx, from.Blocks, sel, tenants, bw, opts.Progress); err != nil {
			return sum, err
		}
		if err := exportDocuments(ctx, from.Recall, sel, tenants, bw, opts.Progress); err != nil {
			return sum, err
		}
	}
	if err := bw.end(); err != nil {
		return sum, err
	}
	sum.Counts, sum.Bytes = bw.counts, cw.n
	return sum, nil
}

// sessionKeys returns the keys of the selected sessions: the named ones,
// each checked to exist, or those the store lists, newest first.
func sessionKeys(ctx context.Context, st *store.Store, sel Selection, damaged func(*agentmem.DamagedError)) ([]store.Key, error) {
	var keys []store.Key
	if len(sel.Sessions) > 0 {
		seen := map[string]bool{}
		for _, id := range sel.Sessions {
			if seen[id] {
				continue
			}
			seen[id] = true
			if err := store.ValidateID(id); err != nil {
				return nil, err
			}
			if _, err := st.Get(ctx, sel.Tenant, id); err != nil {
				return nil, err // it names the session
			}
			keys = append(keys, store.Key{Tenant: sel.Tenant, ID: id})
		}
		return keys, nil
	}
	req := store.ListRequest{Tenant: sel.Tenant, ExactTenant: sel.ExactTenant, UserID: sel.UserID, Agent: sel.Agent, PageSize: store.MaxPageSize}
	if _, _, err := store.ValidateList(req); err != nil {
		return nil, err
	}
	for {
		page, err := st.List(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, s := range page.Sessions {
			keys = append(keys, s.Key())
		}
		for _, d := range page.Damaged {
			damaged(d)
		}
		if page.NextPageToken == "" {
			return keys, nil
		}
		req.PageToken = page.NextPageToken
	}
}

// memoryTenants returns the tenants whose long-term memories the
// selection covers, sorted: the one selected, or every tenant any store
// knows.
func memoryTenants(ctx context.Context, from Stores, sel Selection, keys []store.Key) ([]string, error) {
	if sel.Tenant != "" || sel.ExactTenant {
		return []string{sel.Tenant}, nil
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k.Tenant] = true
	}
	add := func(ts []string, err error) error {
		for _, t := range ts {
			seen[t] = true
		}
		return err
	}
	if from.Facts != nil {
		lst, ok := from.Facts.(facts.Lister)
		if !ok {
			return nil, fmt.Errorf("bundle: export: the facts store %T cannot list its tenants (facts.Lister): %w", from.Facts, errors.ErrUnsupported)
		}
		if err := add(lst.Tenants(ctx)); err != nil {
			return nil, fmt.Errorf("bundle: export: listing the tenants of the facts: %w", err)
		}
	}
	if from.Blocks != nil {
		lst, ok := from.Blocks.(blocks.Lister)
		if !ok {
			return nil, fmt.Errorf("bundle: export: the blocks store %T cannot list its tenants (blocks.Lister): %w", from.Blocks, errors.ErrUnsupported)
		}
		if err := add(lst.Tenants(ctx)); err != nil {
			return nil, fmt.Errorf("bundle: export: listing the tenants of the memory blocks: %w", err)
		}
	}
	if from.Recall != nil {
		if err := add(from.Recall.Backend().Tenants(ctx)); err != nil {
			return nil, fmt.Errorf("bundle: export: listing the tenants of the recall index: %w", err)
		}
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// exportSessions writes the sessions, each with its log and its memory
// blocks. A selected session deleted since it was listed is left out,
// and so is one whose stored record does not decode (damaged); a named
// one is an error either way.
func exportSessions(ctx context.Context, from Stores, keys []store.Key, selected bool, w *writer, damaged func(*agentmem.DamagedError), progress func(ExportProgress)) error {
	return eachOfPart(ctx, KindSession, keys, progress, func(k store.Key) error {
		started := false
		err := store.ExportLog(ctx, from.Sessions, k.Tenant, k.ID, func(s *store.Session) error {
			started = true
			return w.session(s)
		}, w.entry)
		var d *agentmem.DamagedError
		switch {
		case err == nil:
			return exportBlocks(ctx, from.Blocks, k.Tenant, blocks.Session(k.ID), w)
		case selected && !started && errors.Is(err, agentmem.ErrNotFound):
		case selected && !started && errors.As(err, &d):
			damaged(d)
		default:
			return fmt.Errorf("session %q: %w", k.ID, err)
		}
		return nil
	})
}

// exportBlocks writes the owner's blocks, each with its history.
func exportBlocks(ctx context.Context, st blocks.Store, tenant string, owner blocks.Owner, w *writer) error {
	if st == nil {
		return nil
	}
	bs, err := st.List(ctx, tenant, owner)
	if err != nil {
		return fmt.Errorf("bundle: export: the memory blocks of %s: %w", owner, err)
	}
	for _, b := range bs {
		h, err := st.History(ctx, b.Key)
		if err != nil {
			return fmt.Errorf("bundle: export: the history of block %q of %s: %w", b.Label, owner, err)
		}
		if err := w.block(b, h); err != nil {
			return err
		}
	}
	return nil
}

// exportFacts writes the facts and audit log of every user selected, in
// each tenant: all users with facts, or the one selected. A user whose
// audit log does not decode is left out, damaged.
func exportFacts(ctx context.Context, st facts.Store, sel Selection, tenants []string, w *writer, damaged func(*agentmem.DamagedError), progress func(ExportProgress)) error {
	if st == nil {
		return nil
	}
	type user struct{ tenant, id string }
	users, err := perTenant(tenants, sel, func(t string) user { return user{t, sel.UserID} }, func(t string) ([]user, error) {
		lst, ok := st.(facts.Lister)
		if !ok {
			return nil, fmt.Errorf("bundle: export: the facts store %T cannot list its users (facts.Lister): %w", st, errors.ErrUnsupported)
		}
		ids, err := lst.Users(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("bundle: export: listing the users with facts: %w", err)
		}
		var users []user
		for _, id := range ids {
			users = append(users, user{t, id})
		}
		return users, nil
	})
	if err != nil {
		return err
	}
	return eachOfPart(ctx, KindFacts, users, progress, func(u user) error {
		fs, err := st.Facts(ctx, u.tenant, u.id)
		if err != nil {
			return fmt.Errorf("bundle: export: the facts of user %q: %w", u.id, err)
		}
		audit, err := st.Audit(ctx, u.tenant, u.id)
		var d *agentmem.DamagedError
		switch {
		case errors.As(err, &d):
			damaged(d)
			fs, audit = nil, nil
		case err != nil:
			return fmt.Errorf("bundle: export: the facts' audit log of user %q: %w", u.id, err)
		}
		if len(fs) > 0 || len(audit) > 0 {
			return w.facts(u.tenant, u.id, fs, audit)
		}
		return nil
	})
}

// exportUserBlocks writes the blocks of every user selected, in each
// tenant: all users with blocks, or the one selected.
func exportUserBlocks(ctx context.Context, st blocks.Store, sel Selection, tenants []string, w *writer, progress func(ExportProgress)) error {
	if st == nil {
		return nil
	}
	type owner struct {
		tenant string
		blocks.Owner
	}
	owners, err := perTenant(tenants, sel, func(t string) owner { return owner{t, blocks.User(sel.UserID)} }, func(t string) ([]owner, error) {
		lst, ok := st.(blocks.Lister)
		if !ok {
			return nil, fmt.Errorf("bundle: export: the blocks store %T cannot list their owners (blocks.Lister): %w", st, errors.ErrUnsupported)
		}
		os, err := lst.Owners(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("bundle: export: listing the owners of memory blocks: %w", err)
		}
		var owners []owner
		for _, o := range os {
			// A session's blocks go with the session.
			if o.Kind == blocks.OwnerUser {
				owners = append(owners, owner{t, o})
			}
		}
		return owners, nil
	})
	if err != nil {
		return err
	}
	return eachOfPart(ctx, KindBlock, owners, progress, func(o owner) error {
		return exportBlocks(ctx, st, o.tenant, o.Owner, w)
	})
}

// perTenant returns what the selection takes of each tenant: with
// sel.All, all that list returns; otherwise the one that one names.
func perTenant[T any](tenants []string, sel Selection, one func(tenant string) T, list func(tenant string) ([]T, error)) ([]T, error) {
	var out []T
	for _, t := range tenants {
		if !sel.All {
			out = append(out, one(t))
			continue
		}
		all, err := list(t)
		if err != nil {
			return nil, err
		}
		out = append(out, all...)
	}
	return out, nil
}

// eachOfPart writes each item of a part of the export with write, in
// order, and tells progress of the part's total and of each item done.
// It stops when ctx ends.
func eachOfPart[T any](ctx context.Context, part string, items []T, progress func(ExportProgress), write func(T) error) error {
	progress(ExportProgress{Part: part, Total: len(items)})
	for i, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := write(it); err != nil {
			return err
		}
		progress(ExportProgress{Part: part, Done: i + 1, Total: len(items)})
	}
	return nil
}

// exportDocuments writes the recall documents selected in each tenant,
// but those derived from sessions: all, or those whose metadata names
// the user.
func exportDocuments(ctx context.Context, ix *recall.Index, sel Selection, tenants []string, w *writer, progress func(ExportProgress)) error {
	if ix == nil {
		return nil
	}
	var f recall.Filter
	if !sel.All {
		f.Metadata = map[string]string{recall.MetaUser: sel.UserID}
	}
	progress(ExportProgress{Part: KindDocument, Total: -1})
	n := 0
	for _, t := range tenants {
		after := ""
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			docs, err := ix.Scan(ctx, t, f, after, scanPage)
			if err != nil {
				return fmt.Errorf("bundle: export: the recall documents: %w", err)
			}
			for _, d := range docs {
				if recallview.IsStepDoc(d) {
					continue
				}
				if err := w.document(d); err != nil {
					return err
				}
				n++
				progress(ExportProgress{Part: KindDocument, Done: n, Total: -1})
			}
			if len(docs) < scanPage {
				break
			}
			after = docs[len(docs)-1].ID
		}
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
