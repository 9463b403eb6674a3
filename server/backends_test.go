package server

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	neturl "net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/internal/testenv"
	"github.com/agentmem/agentmem/store"
	"github.com/agentmem/agentmem/store/postgres"
	"github.com/agentmem/agentmem/store/sqlite"
)

// The error statuses on the real backends: a stored row that does not
// decode is a failure nobody expected (500, no Retry-After), a store that
// is closed or cannot be reached is unavailable (503 with Retry-After).

// onStore returns an env whose server uses st.
func onStore(t *testing.T, st *store.Store) *env {
	t.Helper()
	return newEnv(t, func(c *Config) { c.Store = st })
}

// checkStatus fails unless r is an error with the status and code, and
// Retry-After only with 503.
func checkStatus(t *testing.T, what string, r *response, status int, code string) {
	t.Helper()
	if r.code != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.code, status, r.body)
	}
	if e := r.apiErr(t); e.Code != code {
		t.Errorf("%s: code %q, want %q", what, e.Code, code)
	}
	retry := r.header.Get("Retry-After")
	if (status == 503) != (retry != "") {
		t.Errorf("%s: status %d with Retry-After %q", what, status, retry)
	}
}

// seed creates session s with two steps through the API.
func seed(e *env) {
	e.create("s")
	e.appendSteps("s", "["+sysStep+","+taskStep+"]")
}

func TestSQLiteCorruptRowAndClosedStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentmem.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := onStore(t, st)
	seed(e)

	// Damage the second entry behind the store's back.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE entries SET body = CAST('{"type":"task","gar' AS BLOB) WHERE session_id = 's' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, "read over a corrupt row", e.do("GET", "/v1/sessions/s/steps", nil), 500, api.CodeInternal)
	e.must(200, "GET", "/v1/sessions/s", nil) // the session's row is fine

	st.Close()
	checkStatus(t, "closed store", e.do("GET", "/v1/sessions/s", nil), 503, api.CodeUnavailable)
	checkStatus(t, "closed store", e.do("POST", "/v1/sessions/s/steps", taskStep), 503, api.CodeUnavailable)
}

func TestPostgresCorruptRowAndUnreachable(t *testing.T) {
	url := testenv.PostgresURL(t)
	schema := testenv.FreshSchema(t, url)
	ctx := context.Background()

	// The store reaches the database through a proxy the test can cut.
	target, err := pgAddr(url)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, target)
	st, err := postgres.OpenDriver(ctx, replaceHost(url, p.addr()), postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := onStore(t, store.New(st))
	seed(e)

	if _, err := st.Pool().Exec(ctx, `UPDATE entries SET body = '{"type":"task","gar' WHERE session_id = 's' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, "read over a corrupt row", e.do("GET", "/v1/sessions/s/steps", nil), 500, api.CodeInternal)

	p.cut() // the database is unreachable from now on
	checkStatus(t, "unreachable database", e.do("GET", "/v1/sessions/s", nil), 503, api.CodeUnavailable)
	checkStatus(t, "unreachable database", e.do("POST", "/v1/sessions", `{"id":"t"}`), 503, api.CodeUnavailable)
}

// proxy forwards TCP connections to a target until cut, which closes the
// listener and every connection it forwarded: the target is then
// unreachable, as a database behind a failed network is.
type proxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(u, c); u.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

// cut closes the listener and every forwarded connection, and waits for
// the proxy's goroutines to end.
func (p *proxy) cut() {
	p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// pgAddr returns the host:port of a postgres:// URL.
func pgAddr(url string) (string, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return "", err
	}
	if u.Port() == "" {
		return "", errors.New("the test database URL has no port")
	}
	return u.Host, nil
}

// replaceHost returns url with its host:port replaced.
func replaceHost(url, hostPort string) string {
	u, _ := neturl.Parse(url)
	u.Host = hostPort
	return u.String()
}
