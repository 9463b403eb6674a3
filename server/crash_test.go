package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
)

// The kill tests run `agentmem serve`, append from concurrent clients,
// kill the server with SIGKILL at a random moment, start it again on the
// same store and check that every append it acknowledged is found by
// recall, with no backfill: the recall index follows the log from a
// durable cursor, so a turn stored but not yet indexed when the process
// died is indexed by the next one.

const (
	killRounds  = 20
	killClients = 8
)

func TestKillRecallSQLite(t *testing.T) {
	bin := buildBinary(t)
	storeURL := "sqlite://" + filepath.Join(t.TempDir(), "kill.db")
	killRecall(t, bin, storeURL)
}

func TestKillRecallPostgres(t *testing.T) {
	storeURL := postgresStoreURL(t, "server_kill")
	bin := buildBinary(t)
	killRecall(t, bin, storeURL)
}

// ackedTurn is an append the server acknowledged.
type ackedTurn struct {
	session string
	seq     int64
	word    string
}

func killRecall(t *testing.T, bin, storeURL string) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("kill moments from seed %d", seed)
	var pending []ackedTurn // acknowledged by the previous process, not checked yet
	total := 0
	for round := 0; round <= killRounds; round++ {
		p := startServe(t, bin, nil, "--addr", "127.0.0.1:0", "--store", storeURL, "--prune-interval", "0")
		if round > 0 {
			checkRecalled(t, p, pending)
			total += len(pending)
		}
		if round == killRounds {
			break
		}
		for c := range killClients {
			p.call(t, 201, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"k%d-%d","user_id":"u"}`, round, c), nil)
		}
		pending = appendUntilKilled(t, p, round, time.Duration(50+rng.IntN(400))*time.Millisecond)
		if len(pending) == 0 {
			t.Fatalf("round %d: no append was acknowledged before the kill", round)
		}
	}
	t.Logf("%d rounds, %d acknowledged turns, every one found by recall after a SIGKILL", killRounds, total)
}

// appendUntilKilled runs killClients clients appending to their own
// sessions, kills the server the delay after the first acknowledged
// append, and returns the appends it acknowledged.
func appendUntilKilled(t *testing.T, p *process, round int, after time.Duration) []ackedTurn {
	t.Helper()
	var (
		mu    sync.Mutex
		acked []ackedTurn
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	firstAck := make(chan struct{}) // closed at the first acknowledged append
	var once sync.Once
	for c := range killClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("k%d-%d", round, c)
			for i := 0; ctx.Err() == nil; i++ {
				w := killWord(round, c, i)
				body := fmt.Sprintf(`{"role":"user","content":"remember the word %s please"}`, w)
				req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+p.addr+"/v1/sessions/"+id+"/messages", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return // killed
				}
				var ar api.AppendResponse
				err = json.NewDecoder(resp.Body).Decode(&ar)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 201 || len(ar.Seqs) != 1 {
					return // killed mid-answer: not acknowledged
				}
				mu.Lock()
				acked = append(acked, ackedTurn{session: id, seq: ar.Seqs[0], word: w})
				mu.Unlock()
				once.Do(func() { close(firstAck) })
			}
		}()
	}
	// The kill comes a random moment after the first acknowledged append
	// (on a loaded machine the first may take longer than the moment).
	select {
	case <-firstAck:
	case <-time.After(time.Minute):
		t.Fatalf("round %d: no append was acknowledged within a minute", round)
	}
	time.Sleep(after) // the random moment of the kill, not a synchronisation
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	cancel()
	wg.Wait()
	return acked
}

// killWord is a word that occurs in one turn only: letters, so that the
// analyzer keeps it whole.
func killWord(round, client, i int) string {
	var b strings.Builder
	b.WriteString("zq")
	for _, n := range []int{round, client, i} {
		for {
			b.WriteByte(byte('a' + n%26))
			n /= 26
			if n == 0 {
				break
			}
		}
		b.WriteByte('x')
	}
	return b.String()
}

// checkRecalled checks that every acknowledged turn is indexed (its
// document is there) and, for a sample, found by a search for its word.
func checkRecalled(t *testing.T, p *process, turns []ackedTurn) {
	t.Helper()
	// One fresh search waits until the index has reached the log.
	start := time.Now()
	p.call(t, 200, "GET", "/v1/recall/search?q=remember&k=1&fresh=true", "", nil)
	caughtUp := time.Since(start)
	if caughtUp > 10*time.Second {
		t.Errorf("the index took %v to reach the log after a restart", caughtUp)
	}
	for i, a := range turns {
		var doc api.RecallDocument
		p.call(t, 200, "GET", "/v1/recall/"+url.PathEscape(fmt.Sprintf("%s#%d", a.session, a.seq)), "", &doc)
		if !strings.Contains(doc.Text, a.word) {
			t.Fatalf("turn %s#%d: indexed text %q lacks %q", a.session, a.seq, doc.Text, a.word)
		}
		if i%10 != 0 {
			continue
		}
		var res api.RecallSearchResponse
		p.call(t, 200, "GET", "/v1/recall/search?k=1&q="+a.word, "", &res)
		if len(res.Hits) != 1 || res.Hits[0].SessionID != a.session || res.Hits[0].Step != a.seq {
			var b bytes.Buffer
			_ = json.NewEncoder(&b).Encode(res)
			t.Fatalf("search %q: %s, want %s#%d", a.word, b.String(), a.session, a.seq)
		}
	}
}
