package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/store"
)

// readPageSize is the number of log entries the client asks for per page
// when it reads a log in pages.
const readPageSize = api.DefaultReadLimit

// readConsistencyAttempts bounds how often Read starts over when the
// session changed between its requests.
const readConsistencyAttempts = 3

// ttlSeconds converts a TTL to the API's whole seconds.
func ttlSeconds(op string, ttl time.Duration) (int64, error) {
	if ttl%time.Second != 0 {
		return 0, &UnsupportedError{Op: op, Reason: fmt.Sprintf("the API takes a TTL in whole seconds, not %v", ttl)}
	}
	return int64(ttl / time.Second), nil
}

// Create implements store.Store with POST /v1/sessions, or POST
// /v1/sessions/{parent}/fork for a branch (req.ParentID set).
//
// The server puts the session in the API key's tenant: a req.Tenant
// other than that one is refused (see WithTenant). A branch gets its
// parent's user and agent: a req.UserID or req.Agent that differs from
// the parent's is refused, and a branch created without Metadata gets
// its parent's metadata. TTLs are whole seconds. These refusals are
// *UnsupportedError, before anything is written.
//
// The server stores a session's settings as they apply: a session
// created without a Pinning gets agentmem.DefaultPinning, an AutoCompact
// its defaults, and a branch created without them its parent's.
func (c *Client) Create(ctx context.Context, req store.CreateRequest) (*store.Session, error) {
	if c.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := store.ValidateCreate(req); err != nil {
		return nil, err
	}
	ttl, err := ttlSeconds("Create", req.TTL)
	if err != nil {
		return nil, err
	}
	if err := c.checkTenant("Create", req.Tenant); err != nil {
		return nil, err
	}
	var sess store.Session
	if req.ParentID != "" {
		if req.UserID != "" || req.Agent != "" {
			parent, err := c.Get(ctx, req.Tenant, req.ParentID)
			if err != nil {
				return nil, err
			}
			if (req.UserID != "" && req.UserID != parent.UserID) || (req.Agent != "" && req.Agent != parent.Agent) {
				return nil, &UnsupportedError{Op: "Create", Reason: "a branch gets its parent's user and agent; the API cannot give it others"}
			}
		}
		retention := req.Retention
		if retention == "" {
			retention = store.SessionRetention // the store's default, not the parent's
		}
		if _, err := c.call(ctx, request{
			method: http.MethodPost, path: "/v1/sessions/" + pathID(req.ParentID) + "/fork",
			body: ForkRequest{AtSeq: req.ForkSeq, ID: req.ID, Metadata: req.Metadata, Retention: retention, TTLSeconds: ttl,
				Pinning: req.Pinning, AutoCompact: req.AutoCompact},
		}, &sess); err != nil {
			return nil, existsError(err, req)
		}
	} else {
		if _, err := c.call(ctx, request{
			method: http.MethodPost, path: "/v1/sessions",
			body: api.CreateSessionRequest{ID: req.ID, UserID: req.UserID, Agent: req.Agent, Metadata: req.Metadata, Retention: req.Retention, TTLSeconds: ttl,
				Pinning: req.Pinning, AutoCompact: req.AutoCompact},
		}, &sess); err != nil {
			return nil, existsError(err, req)
		}
	}
	if err := checkSession(&sess); err != nil {
		return nil, err
	}
	if req.Tenant != "" && sess.Tenant != req.Tenant {
		// WithTenant named the wrong tenant: undo.
		_ = c.Delete(ctx, "", sess.ID)
		return nil, &UnsupportedError{Op: "Create", Reason: fmt.Sprintf("the server put the session in the API key's tenant %q, not %q (WithTenant is wrong); it was deleted", sess.Tenant, req.Tenant)}
	}
	c.learnTenant(sess.Tenant)
	return &sess, nil
}

// existsError turns the server's answer that a create's ID is in use (409
// conflict on the field id) into the *store.ExistsError every store
// returns, so that callers tell it from other conflicts alike.
func existsError(err error, req store.CreateRequest) error {
	var e *Error
	if req.ID != "" && errors.As(err, &e) && e.Status == http.StatusConflict && e.Code == api.CodeConflict && e.Field == "id" {
		return &store.ExistsError{Tenant: req.Tenant, ID: req.ID}
	}
	return err
}

// checkTenant refuses, with an *UnsupportedError, a request (op) for a
// session of a tenant other than the API key's: the server serves that
// tenant only. The empty tenant stands for the key's, whatever it is; a
// named one must be the key's, as the client knows it (WithTenant, or
// learnt from an answer).
func (c *Client) checkTenant(op, tenant string) error {
	if tenant == "" {
		return nil
	}
	t, ok := c.knownTenant()
	switch {
	case !ok:
		return &UnsupportedError{Op: op, Reason: fmt.Sprintf("the server serves the API key's tenant, and the client does not know it to compare with %q (use WithTenant)", tenant)}
	case t != tenant:
		return &UnsupportedError{Op: op, Reason: fmt.Sprintf("the server serves the API key's tenant, %q, not %q", t, tenant)}
	}
	return nil
}

// checkSession checks a session the server returned.
func checkSession(s *store.Session) error {
	if s.ID == "" || s.LastSeq < 0 || s.ForkSeq < 0 {
		return fmt.Errorf("agentmem client: the server returned a malformed session %q", s.ID)
	}
	return nil
}

// Get implements store.Store with GET /v1/sessions/{id}, in the API
// key's tenant (see checkTenant).
func (c *Client) Get(ctx context.Context, tenant, id string) (*store.Session, error) {
	if c.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := store.ValidateKey(tenant, id); err != nil {
		return nil, err
	}
	if err := c.checkTenant("Get", tenant); err != nil {
		return nil, err
	}
	var sess store.Session
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/sessions/" + pathID(id), idempotent: true}, &sess); err != nil {
		return nil, err
	}
	if err := checkSession(&sess); err != nil {
		return nil, err
	}
	c.learnTenant(sess.Tenant)
	return &sess, nil
}

// List implements store.Store with GET /v1/sessions. The server lists the
// API key's tenant's sessions only; a req.Tenant filter other than that
// tenant (with ExactTenant, the default tenant included) gives an empty
// list.
func (c *Client) List(ctx context.Context, req store.ListRequest) (*store.ListResponse, error) {
	if c.closed.Load() {
		return nil, store.ErrClosed
	}
	if _, _, err := store.ValidateList(req); err != nil {
		return nil, err
	}
	q := url.Values{}
	if req.UserID != "" {
		q.Set("user_id", req.UserID)
	}
	if req.Agent != "" {
		q.Set("agent", req.Agent)
	}
	if req.ParentID != "" {
		q.Set("parent_id", req.ParentID)
	}
	if req.PageSize > 0 {
		q.Set("page_size", strconv.Itoa(min(req.PageSize, store.MaxPageSize)))
	}
	if req.PageToken != "" {
		q.Set("page_token", req.PageToken)
	}
	var out api.ListSessionsResponse
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/sessions", query: q, idempotent: true}, &out); err != nil {
		return nil, err
	}
	resp := &store.ListResponse{NextPageToken: out.NextPageToken}
	for _, s := range out.Sessions {
		if s == nil {
			continue
		}
		if err := checkSession(s); err != nil {
			return nil, err
		}
		c.learnTenant(s.Tenant)
		// Every session listed is the key's tenant's: the filter keeps
		// all or none.
		if (req.Tenant != "" || req.ExactTenant) && s.Tenant != req.Tenant {
			return &store.ListResponse{}, nil
		}
		resp.Sessions = append(resp.Sessions, s)
	}
	resp.Damaged = c.reportDamaged(ctx, "session", out.Damaged)
	return resp, nil
}

// reportDamaged returns the damaged records of a list or a search
// answered by the server (of the key's tenant, of kind: "session",
// "fact", "document"), each reported to ctx's damage reporter
// (agentmem.ReportDamaged) as a local store reports them.
func (c *Client) reportDamaged(ctx context.Context, kind string, ds []api.DamagedRecord) []*agentmem.DamagedError {
	if len(ds) == 0 {
		return nil
	}
	tenant, _ := c.knownTenant()
	out := make([]*agentmem.DamagedError, len(ds))
	for i, d := range ds {
		out[i] = &agentmem.DamagedError{Kind: kind, Tenant: tenant, ID: d.ID, Err: errors.New(d.Error)}
		agentmem.ReportDamaged(ctx, out[i])
	}
	return out
}

// Delete implements store.Store with DELETE /v1/sessions/{id}, in the
// API key's tenant (see checkTenant).
func (c *Client) Delete(ctx context.Context, tenant, id string) error {
	if c.closed.Load() {
		return store.ErrClosed
	}
	if err := store.ValidateKey(tenant, id); err != nil {
		return err
	}
	if err := c.checkTenant("Delete", tenant); err != nil {
		return err
	}
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/sessions/" + pathID(id)})
	return err
}

// Append implements store.Store with POST /v1/sessions/{id}/steps, with
// ExpectedLastSeq as If-Match; a request with a compaction record sends
// the steps and the record together (the route's envelope form), so a
// bound memory's prunes and summaries work as on a local store. The
// server bounds a request to
// api.MaxStepsPerRequest steps and its body size (413, ErrInvalid).
// Steps have IDs, so a request that failed with a retryable error is sent
// again (WithRetries): the server stores its steps once.
//
// The route fingerprints what it is sent itself, so req.Idempotency is not
// sent: the step IDs, which a key derives, make a retry idempotent (as for
// a session appended to before keys were recorded, see
// store.AppendRequest). A request that only checks its key (store.KeyOnly)
// finds no record and stores nothing.
func (c *Client) Append(ctx context.Context, req store.AppendRequest) (*store.AppendResponse, error) {
	if c.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := store.ValidateAppend(req); err != nil {
		return nil, err
	}
	if err := c.checkTenant("Append", req.Tenant); err != nil {
		return nil, err
	}
	if store.KeyOnly(req) {
		s, err := c.Get(ctx, req.Tenant, req.SessionID)
		if err != nil {
			return nil, err
		}
		return &store.AppendResponse{LastSeq: s.LastSeq}, nil
	}
	body, err := encodeSteps(req.Steps)
	if err != nil {
		return nil, err
	}
	if req.Compaction != nil {
		comp, err := store.EncodeCompaction(req.Compaction)
		if err != nil {
			return nil, err
		}
		body = []byte(`{"steps":` + string(body) + `,"compaction":` + string(comp) + `}`)
	}
	var h map[string]string
	if req.ExpectedLastSeq != nil {
		h = map[string]string{"If-Match": strconv.Quote(strconv.FormatInt(*req.ExpectedLastSeq, 10))}
	}
	var out api.AppendResponse
	if _, err := c.call(ctx, request{
		method: http.MethodPost, path: "/v1/sessions/" + pathID(req.SessionID) + "/steps",
		body: body, header: h,
		// A compaction alone has no step IDs to make a retry idempotent.
		idempotent: len(req.Steps) > 0,
	}, &out); err != nil {
		return nil, err
	}
	if len(out.Seqs) != len(req.Steps) {
		return nil, fmt.Errorf("agentmem client: the server answered %d sequence numbers for %d steps", len(out.Seqs), len(req.Steps))
	}
	return &store.AppendResponse{Seqs: out.Seqs, LastSeq: out.LastSeq, CompactionSeq: out.CompactionSeq}, nil
}

// encodeSteps encodes steps as a JSON array in the core's step JSON.
func encodeSteps(steps []agentmem.Step) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, s := range steps {
		b, err := store.EncodeStep(s)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// Read implements store.Store with GET /v1/sessions/{id} and GET
// /v1/sessions/{id}/steps, in pages of api.DefaultReadLimit entries.
//
// The API differs from a local store in two ways. It does not say when
// the server appended a step, so Entry.Time is zero for step entries
// (compaction entries have theirs). And it has no working-set read: with
// WorkingSet the client reads the whole visible log and computes the
// working set as a store does (store.WorkingSet), which costs the whole
// log, not just the working set.
//
// The session and the entries come from separate requests; if the
// session changes between them the client reads again (a few times), and
// the Session returned always has the LastSeq of the log read, so a
// writer using it as ExpectedLastSeq gets a conflict rather than skipping
// entries it has not seen.
func (c *Client) Read(ctx context.Context, req store.ReadRequest) (*store.ReadResponse, error) {
	if c.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := store.ValidateRead(req); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		sess, err := c.Get(ctx, req.Tenant, req.SessionID)
		if err != nil {
			return nil, err
		}
		var entries []store.Entry
		var last int64
		switch {
		case req.WorkingSet:
			entries, last, err = c.readLog(ctx, req.SessionID, 0, 0)
		case req.Last > 0 && req.Last <= api.MaxReadLimit:
			entries, last, err = c.readPage(ctx, req.SessionID, req.After, 0, req.Last)
		case req.Last > 0:
			entries, last, err = c.readLog(ctx, req.SessionID, req.After, 0)
			entries = store.SelectEntries(entries, store.ReadRequest{Last: req.Last})
		default:
			entries, last, err = c.readLog(ctx, req.SessionID, req.After, req.Limit)
		}
		if err != nil {
			return nil, err
		}
		if last != sess.LastSeq && attempt < readConsistencyAttempts {
			continue
		}
		sess.LastSeq = last
		if req.WorkingSet {
			return &store.ReadResponse{Session: sess, Steps: store.WorkingSet(entries), Replaced: store.ReplacedSeqs(entries)}, nil
		}
		return &store.ReadResponse{Session: sess, Entries: entries}, nil
	}
}

// readLog reads the entries after after, at most limit of them (0: all),
// as of the session's last sequence number when the first page was read
// (returned as last).
func (c *Client) readLog(ctx context.Context, id string, after int64, limit int) ([]store.Entry, int64, error) {
	var out []store.Entry
	last := int64(-1)
	for {
		n := readPageSize
		if limit > 0 {
			n = min(n, limit-len(out))
		}
		page, pageLast, err := c.readPage(ctx, id, after, n, 0)
		if err != nil {
			return nil, 0, err
		}
		if last < 0 {
			last = pageLast
		}
		for _, e := range page {
			if e.Seq > last {
				return out, last, nil
			}
			out = append(out, e)
		}
		if len(page) < n || (limit > 0 && len(out) >= limit) || page[len(page)-1].Seq >= last {
			return out, last, nil
		}
		after = page[len(page)-1].Seq
	}
}

// readPage reads one page of the log: the entries after after, limit or
// last of them.
func (c *Client) readPage(ctx context.Context, id string, after int64, limit, last int) ([]store.Entry, int64, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if last > 0 {
		q.Set("last", strconv.Itoa(last))
	}
	var out api.ReadStepsResponse
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/sessions/" + pathID(id) + "/steps", query: q, idempotent: true}, &out); err != nil {
		return nil, 0, err
	}
	entries := make([]store.Entry, 0, len(out.Steps)+len(out.Compactions))
	for _, s := range out.Steps {
		if s == nil {
			return nil, 0, fmt.Errorf("agentmem client: the server returned a null step")
		}
		entries = append(entries, store.Entry{Seq: int64(s.Info().Number), Kind: store.StepEntry, Step: s})
	}
	for _, ce := range out.Compactions {
		rec := &store.CompactionRecord{Amend: ce.Amend, Replaced: []agentmem.Step(ce.Replaced), Removed: ce.Removed}
		switch {
		case ce.Working != nil && !ce.Amend:
			rec.Working = *ce.Working
		case ce.Working == nil && !ce.Amend:
			// A full record names its working set, even an empty one:
			// one without would read as a working set emptied.
			return nil, 0, fmt.Errorf("agentmem client: the server returned compaction entry %d without its working set", ce.Seq)
		}
		entries = append(entries, store.Entry{Seq: ce.Seq, Kind: store.CompactionEntry, Time: ce.Time, Compaction: rec})
	}
	slices.SortFunc(entries, func(a, b store.Entry) int { return compareInt64(a.Seq, b.Seq) })
	for i, e := range entries {
		if e.Seq <= after || (i > 0 && e.Seq == entries[i-1].Seq) || e.Seq > out.LastSeq {
			return nil, 0, fmt.Errorf("agentmem client: the server returned a log entry out of place (seq %d)", e.Seq)
		}
	}
	return entries, out.LastSeq, nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Prune implements store.Store: the API has no route for it (retention is
// the server's to apply), so it is an *UnsupportedError.
func (c *Client) Prune(ctx context.Context, req store.PruneRequest) (*store.PruneResponse, error) {
	if c.closed.Load() {
		return nil, store.ErrClosed
	}
	return nil, &UnsupportedError{Op: "Prune", Reason: "the API has no route for it; retention is applied by the server's own store"}
}

// Ping checks that the server is up and its store reachable (GET
// /readyz). It lets a server.Server run over a Client report readiness.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/readyz"})
	return err
}
