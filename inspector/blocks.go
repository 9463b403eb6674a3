package inspector

import (
	"context"
	"net/http"
	"net/url"
	"slices"

	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/store"
)

// MaxBlocksShown bounds the blocks of one owner a page lists; a note says
// how many more the owner has.
const MaxBlocksShown = 100

// BlocksSource reads the memory blocks of users and sessions for the
// pages; *blocks.Memory is one. Errors wrapping agentmem.ErrInvalid are
// shown as a bad request, agentmem.ErrNotFound as a missing page, any
// other error as an internal one.
type BlocksSource interface {
	// List returns the owner's blocks, by label; an owner without blocks
	// has none.
	List(ctx context.Context, tenant string, owner blocks.Owner) ([]blocks.Block, error)
	// Get returns a block, or an error wrapping agentmem.ErrNotFound.
	Get(ctx context.Context, k blocks.Key) (blocks.Block, error)
	// History returns the block's changes, oldest first.
	History(ctx context.Context, k blocks.Key) ([]blocks.Change, error)
}

// blockGroup is the blocks of one owner as a page lists them.
type blockGroup struct {
	Kind     string // "user" or "session"
	Owner    string
	OwnerURL string
	Rows     []blockRow
	// More counts the owner's blocks past MaxBlocksShown, not listed.
	More int
}

// blockRow is one block in a list.
type blockRow struct {
	Label, URL   string
	Value        shownText
	Chars, Limit int
	Bar          string // its size against its limit, in percent of the bar
	Description  string
	ReadOnly     bool
	Version      int64
	Updated      string
	UpdatedBy    string
	// Hidden is set on a user's block that a block of the session with
	// the same label hides from the session's contexts (blocks.Shown).
	Hidden bool
}

// blocksData is the blocks page's data: a form without an owner, the
// owner's blocks (Groups), or one block and its versions (Block).
type blocksData struct {
	Configured    bool
	User, Session string // the owner asked for
	Groups        []blockGroup
	Block         *blockPage
}

// blockPage is one block and its history.
type blockPage struct {
	Kind, Owner, OwnerURL string
	Row                   blockRow
	Created               string
	// Changes are the versions of the block, newest first.
	Changes []changeRow
	// Oldest is the oldest version the history keeps, when older ones
	// were dropped (blocks.MaxHistory); 0 when it has them all.
	Oldest     int64
	MaxHistory int
}

// changeRow is one version of a block: who made it, when, how, and its
// value before and after.
type changeRow struct {
	Version       int64
	Action        string
	By            string
	At            string
	Diff          diffView
	Before, After shownText
	Created       bool // the change created the block: there is no before
}

// blockURL links to a block's page, blocksURL to an owner's blocks.
func blockURL(o blocks.Owner, label string) string {
	return "/blocks?" + url.Values{string(o.Kind): {o.ID}, "label": {label}}.Encode()
}

func blocksURL(o blocks.Owner) string {
	return "/blocks?" + url.Values{string(o.Kind): {o.ID}}.Encode()
}

// ownerURL links to what owns blocks: a session's page, or a user's
// sessions.
func ownerURL(o blocks.Owner) string {
	if o.Kind == blocks.OwnerSession {
		return sessionURL(o.ID)
	}
	return "/?" + url.Values{"user": {o.ID}}.Encode()
}

// newBlockRow returns a block as a list shows it.
func newBlockRow(b blocks.Block) blockRow {
	return blockRow{
		Label: b.Label, URL: blockURL(b.Owner, b.Label),
		Value: clip(b.Value, MaxShownText), Chars: b.Chars(), Limit: b.Limit,
		Bar: barWidth(b.Chars(), b.Limit), Description: cutBytes(b.Description, MaxShownText),
		ReadOnly: b.ReadOnly, Version: b.Version, Updated: formatTime(b.UpdatedAt), UpdatedBy: b.UpdatedBy,
	}
}

// blockGroupOf lists an owner's blocks, marking hidden those whose label
// is in hiddenBy.
func (in *Inspector) blockGroupOf(ctx context.Context, tenant string, o blocks.Owner, hiddenBy map[string]bool) (blockGroup, error) {
	if err := blocks.ValidateOwner(tenant, o); err != nil {
		return blockGroup{}, err
	}
	bs, err := in.cfg.Blocks.List(ctx, tenant, o)
	if err != nil {
		return blockGroup{}, err
	}
	g := blockGroup{Kind: string(o.Kind), Owner: o.ID, OwnerURL: ownerURL(o)}
	if len(bs) > MaxBlocksShown {
		g.More = len(bs) - MaxBlocksShown
		bs = bs[:MaxBlocksShown]
	}
	for _, b := range bs {
		row := newBlockRow(b)
		row.Hidden = hiddenBy[b.Label]
		g.Rows = append(g.Rows, row)
	}
	return g, nil
}

// sessionBlocks lists the blocks a session's contexts show: its user's,
// then its own, as the context orders them (blocks.Shown). The user's
// blocks the session's hide are marked so. Without a blocks source it
// lists none.
func (in *Inspector) sessionBlocks(ctx context.Context, sess *store.Session) ([]blockGroup, error) {
	if in.cfg.Blocks == nil {
		return nil, nil
	}
	own, err := in.blockGroupOf(ctx, sess.Tenant, blocks.Session(sess.ID), nil)
	if err != nil {
		return nil, err
	}
	if sess.UserID == "" {
		return []blockGroup{own}, nil
	}
	labels := make(map[string]bool, len(own.Rows))
	for _, r := range own.Rows {
		labels[r.Label] = true
	}
	user, err := in.blockGroupOf(ctx, sess.Tenant, blocks.User(sess.UserID), labels)
	if err != nil {
		return nil, err
	}
	return []blockGroup{user, own}, nil
}

// shownBlocks counts the blocks a session's contexts show now
// (blocks.Shown); 0 without a blocks source.
func (in *Inspector) shownBlocks(ctx context.Context, sess *store.Session) (int, error) {
	if in.cfg.Blocks == nil {
		return 0, nil
	}
	var user []blocks.Block
	if sess.UserID != "" {
		var err error
		if user, err = in.cfg.Blocks.List(ctx, sess.Tenant, blocks.User(sess.UserID)); err != nil {
			return 0, err
		}
	}
	own, err := in.cfg.Blocks.List(ctx, sess.Tenant, blocks.Session(sess.ID))
	if err != nil {
		return 0, err
	}
	return len(blocks.Shown(user, own)), nil
}

// blocksPage serves memory blocks: GET /blocks?user=U or ?session=S, an
// owner's blocks (a session's with its user's); with &label=L, that block
// and its versions.
func (in *Inspector) blocksPage(w http.ResponseWriter, r *http.Request) {
	tenant, ok := in.tenant(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	d := &blocksData{Configured: in.cfg.Blocks != nil, User: q.Get("user"), Session: q.Get("session")}
	label := q.Get("label")
	if err := checkBlocksQuery(d.User, d.Session, label); err != nil {
		in.fail(w, r, err)
		return
	}
	title := "Memory blocks"
	if d.Configured && (d.User != "" || d.Session != "") {
		o := blocks.User(d.User)
		if d.Session != "" {
			o = blocks.Session(d.Session)
		}
		var err error
		switch {
		case label != "":
			d.Block, err = in.blockVersions(r.Context(), blocks.Key{Tenant: tenant, Owner: o, Label: label})
			title = "Block " + label + " of " + o.String()
		case d.Session != "":
			var sess *store.Session
			if sess, err = in.getSession(r.Context(), tenant, d.Session); err == nil {
				d.Groups, err = in.sessionBlocks(r.Context(), sess)
			}
			title = "Memory blocks of " + o.String()
		default:
			var g blockGroup
			g, err = in.blockGroupOf(r.Context(), tenant, o, nil)
			d.Groups = []blockGroup{g}
			title = "Memory blocks of " + o.String()
		}
		if err != nil {
			in.fail(w, r, err)
			return
		}
	}
	in.show(w, r, "blocks", page{Title: title, Nav: "blocks", Tenant: tenant, Data: d})
}

// checkBlocksQuery checks the blocks page's query: a user or a session,
// not both, and a label only with one of them.
func checkBlocksQuery(user, session, label string) error {
	if err := textParam("user", user, blocks.MaxFieldBytes); err != nil {
		return err
	}
	if err := textParam("session", session, blocks.MaxFieldBytes); err != nil {
		return err
	}
	if user != "" && session != "" {
		return invalid("session", "give a user or a session, not both")
	}
	if label == "" {
		return nil
	}
	if user == "" && session == "" {
		return invalid("label", "needs the user or the session whose block it is")
	}
	return blocks.ValidateLabel(label)
}

// blockVersions returns a block and its history, newest first.
func (in *Inspector) blockVersions(ctx context.Context, k blocks.Key) (*blockPage, error) {
	if err := blocks.ValidateKey(k); err != nil {
		return nil, err
	}
	b, err := in.cfg.Blocks.Get(ctx, k)
	if err != nil {
		if isNotFound(err) {
			return nil, notFound("No such block.")
		}
		return nil, err
	}
	hist, err := in.cfg.Blocks.History(ctx, k)
	if err != nil {
		return nil, err
	}
	p := &blockPage{Kind: string(k.Owner.Kind), Owner: k.Owner.ID, OwnerURL: ownerURL(k.Owner),
		Row: newBlockRow(b), Created: formatTime(b.CreatedAt), MaxHistory: blocks.MaxHistory}
	if len(hist) > 0 && hist[0].Version > 1 {
		p.Oldest = hist[0].Version
	}
	for _, c := range slices.Backward(hist) {
		p.Changes = append(p.Changes, changeRow{
			Version: c.Version, Action: string(c.Action), By: c.By, At: formatTime(c.At),
			Diff:   newDiffView(c.Before, c.After),
			Before: clip(c.Before, MaxShownText), After: clip(c.After, MaxShownText),
			Created: c.Action == blocks.ActionCreated,
		})
	}
	return p, nil
}
