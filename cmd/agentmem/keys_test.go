package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/auth"
)

// tokenRE matches a whole key line.
var tokenRE = regexp.MustCompile(`^am_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n$`)

// createKey runs agentmem keys create and returns the key.
func createKey(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, env, "", append([]string{"keys", "create"}, args...)...)
	if code != 0 || !tokenRE.MatchString(stdout) || !strings.Contains(stderr, "shown once") {
		t.Fatalf("keys create: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	return strings.TrimSpace(stdout)
}

func TestKeysCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "agentmem.db")
	env := map[string]string{"AGENTMEM_STORE": "sqlite://" + db}
	first := createKey(t, env, "--tenant", "acme", "--name", "ci")
	code, _, stderr := runCLI(t, env, "", "keys", "create", "--tenant", "globex")
	if code != 0 || strings.Contains(stderr, "first key") {
		t.Errorf("second key: exit %d, %q", code, stderr)
	}
	id := first[3:15]

	// list: IDs, never secrets.
	code, stdout, _ := runCLI(t, env, "", "keys", "list")
	if code != 0 || !strings.Contains(stdout, id) || !strings.Contains(stdout, "globex") || strings.Contains(stdout, first[16:]) {
		t.Errorf("list: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, env, "", "keys", "list", "--tenant", "acme", "--json")
	var k auth.Key
	if code != 0 || strings.Count(stdout, "\n") != 1 || json.Unmarshal([]byte(stdout), &k) != nil || k.ID != id || k.Name != "ci" || k.Revoked() {
		t.Errorf("list --json: exit %d %q", code, stdout)
	}

	// revoke, then the list says so.
	code, stdout, _ = runCLI(t, env, "", "keys", "revoke", id)
	if code != 0 || !strings.Contains(stdout, "Revoked key "+id+" of tenant acme") {
		t.Errorf("revoke: exit %d %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, env, "", "keys", "list", "--tenant", "acme")
	if code != 0 || !strings.Contains(stdout, "revoked 20") {
		t.Errorf("list after revoke: %q", stdout)
	}

	// The database file holds no key in plain text.
	for _, p := range []string{db, db + "-wal"} {
		data, _ := os.ReadFile(p)
		if bytes.Contains(data, []byte(first[16:])) {
			t.Errorf("%s holds the key's secret", p)
		}
	}

	// Errors.
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"keys", "create"}, 2, "--tenant is required"},
		{[]string{"keys", "create", "--tenant", "../x"}, 2, "not a valid tenant"},
		{[]string{"keys", "create", "--tenant", "a", "--name", "x\x1by"}, 2, "control character"},
		{[]string{"keys", "revoke", "nope"}, 2, "KEY_ID"},
		{[]string{"keys", "revoke"}, 2, "accepts 1 arg"},
		{[]string{"keys", "revoke", "0123456789ab"}, 1, "not found"},
		{[]string{"keys", "list", "--store", "mem://"}, 2, "mem://"},
		{[]string{"keys", "list", "--store", "ftp://x"}, 1, "unknown scheme"},
	} {
		code, _, stderr := runCLI(t, env, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d %q, want %d %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
	// The default store is the serve default: the data directory's file.
	data := t.TempDir()
	createKey(t, map[string]string{"XDG_DATA_HOME": data}, "--tenant", "acme")
	if _, err := os.Stat(filepath.Join(data, "agentmem", "agentmem.db")); err != nil {
		t.Errorf("default store: %v", err)
	}
}

// syncWriter is a buffer safe for the server's concurrent log writes.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// served is an agentmem serve running in-process.
type served struct {
	addr   string
	log    *syncWriter
	stop   context.CancelFunc
	exited chan int
}

// serve starts agentmem serve in-process and waits for its address; it
// is stopped when the test ends.
func serve(t *testing.T, env map[string]string, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{log: &syncWriter{}, stop: cancel, exited: make(chan int, 1)}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	go func() {
		s.exited <- execute(ctx, append([]string{"serve"}, args...), strings.NewReader(""), io.Discard, s.log, lookup)
	}()
	re := regexp.MustCompile(`msg="agentmem serving" addr=(\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(s.log.String()); m != nil {
			s.addr = m[1]
			break
		}
		select {
		case code := <-s.exited:
			cancel()
			t.Fatalf("serve exited with %d:\n%s", code, s.log)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start:\n%s", s.log)
		}
	}
	t.Cleanup(func() {
		cancel()
		if code := <-s.exited; code != 0 {
			t.Errorf("serve exited with %d:\n%s", code, s.log)
		}
	})
	return s
}

// call sends a request and returns the status and body.
func call(t *testing.T, client *http.Client, method, url, key, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// eventually retries f until it returns true, for up to 15 seconds: the
// servers' key cache lasts 2 (the exact expiry is tested in package auth
// with a manual clock), and a loaded machine may be slow.
func eventually(t *testing.T, what string, f func() bool, last ...*string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !f(); {
		if time.Now().After(deadline) {
			for _, l := range last {
				what += ": last answer " + *l
			}
			t.Fatalf("%s: not within 15s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKeysAgainstServe: keys created and revoked by the CLI apply to a
// server already running on the same store.
func TestKeysAgainstServe(t *testing.T) {
	env := map[string]string{"AGENTMEM_STORE": "sqlite://" + filepath.Join(t.TempDir(), "agentmem.db")}
	s := serve(t, env, "--addr", "127.0.0.1:0")
	base := "http://" + s.addr
	c := &http.Client{Timeout: 10 * time.Second}
	// No key yet: the quickstart works anonymously.
	if code, body := call(t, c, "POST", base+"/v1/sessions", "", `{"id":"anon"}`); code != 201 {
		t.Fatalf("anonymous create: %d %s", code, body)
	}
	key := createKey(t, env, "--tenant", "acme")
	if code, body := call(t, c, "POST", base+"/v1/sessions", key, `{"id":"acme-1"}`); code != 201 || !strings.Contains(body, `"tenant":"acme"`) {
		t.Fatalf("create with the key: %d %s", code, body)
	}
	// The first key turns enforcement on for the running server.
	eventually(t, "anonymous requests refused after the first key", func() bool {
		code, _ := call(t, c, "GET", base+"/v1/sessions", "", "")
		return code == 401
	})
	if code, _ := call(t, c, "GET", base+"/v1/sessions/anon", key, ""); code != 404 {
		t.Errorf("acme reads the default tenant's session: %d", code)
	}
	code, body := call(t, c, "GET", base+"/v1/sessions", key, "")
	if code != 200 || !strings.Contains(body, "acme-1") || strings.Contains(body, "anon") {
		t.Errorf("acme's list: %d %s", code, body)
	}
	if code, _ := call(t, c, "GET", base+"/healthz", "", ""); code != 200 {
		t.Errorf("healthz without a key: %d", code)
	}
	// Revoked: refused within the cache period.
	if code, _, stderr := runCLI(t, env, "", "keys", "revoke", key[3:15]); code != 0 {
		t.Fatal(stderr)
	}
	var last string
	eventually(t, "the revoked key refused", func() bool {
		code, body := call(t, c, "GET", base+"/v1/sessions", key, "")
		last = fmt.Sprint(code, " ", body)
		return code == 401 && strings.Contains(body, "revoked")
	}, &last)
	// The key's last use was recorded.
	_, stdout, _ := runCLI(t, env, "", "keys", "list", "--json")
	var k auth.Key
	if json.Unmarshal([]byte(stdout), &k) != nil || k.LastUsedAt.IsZero() {
		t.Errorf("last use not recorded: %s", stdout)
	}
}

// TestServeRefusals: a non-loopback address requires keys and an active
// one in the store; the TLS flags go together.
func TestServeRefusals(t *testing.T) {
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "agentmem.db")
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--addr", "0.0.0.0:0", "--store", "mem://"}, "mem:// store keeps no keys"},
		{[]string{"--addr", ":0", "--store", dbURL}, "has no active key: create one first with 'agentmem keys create"},
		{[]string{"--addr", "127.0.0.1:0", "--store", "mem://", "--tls-cert", "x.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"--addr", "127.0.0.1:0", "--store", "mem://", "--tls-cert", "x.pem", "--tls-key", "y.pem"}, "no such file"},
		{[]string{"--addr", "127.0.0.1:0", "--store", "mem://", "--cors-origins", "*"}, "wildcard"},
		{[]string{"--addr", "127.0.0.1:0", "--insecure-no-auth"}, "unknown flag"},
	} {
		code, _, stderr := runCLI(t, nil, "", append([]string{"serve"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, code, stderr, c.stderr)
		}
	}
	// A revoked key is not an active one.
	env := map[string]string{"AGENTMEM_STORE": dbURL}
	key := createKey(t, env, "--tenant", "acme")
	runCLI(t, env, "", "keys", "revoke", key[3:15])
	if code, _, stderr := runCLI(t, env, "", "serve", "--addr", "0.0.0.0:0"); code != 2 || !strings.Contains(stderr, "no active key") {
		t.Errorf("only a revoked key: exit %d %q", code, stderr)
	}
	code, stdout, _ := runCLI(t, nil, "", "serve", "--help")
	for _, want := range []string{"--require-keys", "--tls-cert", "--tls-key", "--cors-origins", "404", "Authorization: Bearer"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
}

// TestServeNonLoopbackAndRequireKeys: on every interface, or with
// --require-keys, a key is required from the first request.
func TestServeNonLoopbackAndRequireKeys(t *testing.T) {
	env := map[string]string{"AGENTMEM_STORE": "sqlite://" + filepath.Join(t.TempDir(), "agentmem.db")}
	key := createKey(t, env, "--tenant", "acme")
	c := &http.Client{Timeout: 10 * time.Second}
	s := serve(t, env, "--addr", "0.0.0.0:0")
	_, port, _ := net.SplitHostPort(s.addr)
	base := "http://127.0.0.1:" + port
	if code, _ := call(t, c, "GET", base+"/v1/sessions", "", ""); code != 401 {
		t.Errorf("anonymous on 0.0.0.0: %d", code)
	}
	if code, _ := call(t, c, "GET", base+"/v1/sessions", key, ""); code != 200 {
		t.Errorf("with a key on 0.0.0.0: %d", code)
	}
	if !strings.Contains(s.log.String(), "clear text") {
		t.Error("no warning about plain HTTP on a non-loopback address")
	}
	// --require-keys on loopback with an empty store.
	r := serve(t, map[string]string{"AGENTMEM_REQUIRE_KEYS": "true"}, "--addr", "127.0.0.1:0", "--store", "mem://")
	if code, body := call(t, c, "GET", "http://"+r.addr+"/v1/sessions", "", ""); code != 401 || !strings.Contains(body, "unauthorized") {
		t.Errorf("--require-keys: %d %s", code, body)
	}
	if !strings.Contains(r.log.String(), "api_keys=required") {
		t.Errorf("the startup log does not say keys are required: %s", r.log)
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and
// localhost, and returns its files and a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "agentmem test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pool
}

func TestServeTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "agentmem.db")
	key := createKey(t, map[string]string{"AGENTMEM_STORE": dbURL}, "--tenant", "acme")
	// The files come from the environment, as a deployment sets them.
	s := serve(t, map[string]string{"AGENTMEM_TLS_CERT": certFile, "AGENTMEM_TLS_KEY": keyFile, "AGENTMEM_STORE": dbURL}, "--addr", "127.0.0.1:0")
	if !strings.Contains(s.log.String(), "tls=true") {
		t.Errorf("the startup log does not say TLS: %s", s.log)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, body := call(t, c, "POST", "https://"+s.addr+"/v1/sessions", key, `{"id":"over-tls"}`); code != 201 {
		t.Fatalf("create over TLS: %d %s", code, body)
	}
	if code, _ := call(t, c, "GET", "https://localhost:"+s.addr[strings.LastIndex(s.addr, ":")+1:]+"/v1/sessions/over-tls", key, ""); code != 200 {
		t.Errorf("get over TLS by name: %d", code)
	}
	// A client that does not trust the certificate, or speaks plain
	// HTTP, gets nothing.
	untrusted := &http.Client{Timeout: 10 * time.Second}
	if _, err := untrusted.Get("https://" + s.addr + "/healthz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted certificate: %v", err)
	}
	resp, err := untrusted.Get("http://" + s.addr + "/healthz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP was served")
		}
	}
}
