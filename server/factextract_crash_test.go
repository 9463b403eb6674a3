package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmem/agentmem/api"
)

// extractCrashModel is a stand-in for an OpenAI-compatible model as the
// fact extraction calls it. Turn k's user message is "T<k>: ..."; the
// answer adds the turn's own fact (its codeword), and, for an even k,
// reinforces the user's known fact "Drinks green tea." by its ID. While
// hold is set, the request of turn held is not answered until the
// server that sent it is killed. It counts the answers per turn.
type extractCrashModel struct {
	mu       sync.Mutex
	hold     bool
	held     int
	answered map[int]int
	errs     []string
	holding  chan struct{} // closed when the held request arrives
	once     sync.Once
	stop     chan struct{} // closed when the test ends
}

var turnRE = regexp.MustCompile(`^T(\d+): `)

// codeword is turn k's own fact.
func codeword(k int) string { return fmt.Sprintf("Remembers the codeword zq%dx.", k) }

func (m *extractCrashModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	var in struct {
		Known []struct{ ID, Text string } `json:"known_facts"`
		Turn  []struct{ Role, Content string }
	}
	fail := func(format string, args ...any) {
		m.mu.Lock()
		m.errs = append(m.errs, fmt.Sprintf(format, args...))
		m.mu.Unlock()
		http.Error(w, "bad request", http.StatusBadRequest)
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 ||
		json.Unmarshal([]byte(req.Messages[1].Content), &in) != nil {
		fail("a request that is not an extraction: %v", err)
		return
	}
	k := -1
	for _, msg := range in.Turn {
		if sm := turnRE.FindStringSubmatch(msg.Content); msg.Role == "user" && sm != nil {
			k, _ = strconv.Atoi(sm[1])
		}
	}
	if k < 0 {
		fail("an extraction of no turn: %+v", in.Turn)
		return
	}
	m.mu.Lock()
	hold := m.hold && k == m.held
	m.mu.Unlock()
	if hold {
		m.once.Do(func() { close(m.holding) })
		select { // until the server that asked is killed, or the test ends
		case <-r.Context().Done():
		case <-m.stop:
		}
		return
	}
	decisions := []map[string]string{{"action": "add", "text": codeword(k)}}
	if k%2 == 0 {
		tea := ""
		for _, f := range in.Known {
			if f.Text == "Drinks green tea." {
				tea = f.ID
			}
		}
		if tea == "" {
			fail("turn %d: the known facts %+v do not hold the tea", k, in.Known)
			return
		}
		decisions = append(decisions, map[string]string{"action": "reinforce", "id": tea})
	}
	content, _ := json.Marshal(map[string]any{"decisions": decisions})
	m.mu.Lock()
	m.answered[k]++
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "x", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 10},
	})
}

// TestKillDuringFactExtraction runs `agentmem serve --extract-facts` on
// SQLite with a stand-in model, appends the turns of two users' sessions
// at once (one batch of the extraction), lets the model answer the first
// turns and hold the next, kills the server with SIGKILL while it waits,
// and starts it again with the model answering: every turn is extracted,
// each exactly once. The model answered each turn once, each turn's fact
// exists once, and the fact that half the turns reinforce was
// reinforced once per such turn.
func TestKillDuringFactExtraction(t *testing.T) {
	bin := buildBinary(t)
	storeURL := "sqlite://" + filepath.Join(t.TempDir(), "extract.db")
	const perUser = 8
	users := []string{"alice", "bob"}
	model := &extractCrashModel{hold: true, held: 5, answered: map[int]int{}, holding: make(chan struct{}), stop: make(chan struct{})}
	srv := httptest.NewServer(model)
	defer srv.Close()
	defer close(model.stop)
	args := []string{"--addr", "127.0.0.1:0", "--store", storeURL, "--prune-interval", "0",
		"--llm-base-url", srv.URL + "/v1", "--llm-model", "m", "--extract-facts"}
	p := startServe(t, bin, nil, args...)
	for i, user := range users {
		p.call(t, 201, "POST", "/v1/users/"+user+"/facts", `{"text":"Drinks green tea."}`, nil)
		p.call(t, 201, "POST", "/v1/sessions", fmt.Sprintf(`{"id":"s-%s","user_id":%q,"agent":"helper"}`, user, user), nil)
		var msgs []string
		for k := i * perUser; k < (i+1)*perUser; k++ {
			text := fmt.Sprintf("T%d: my codeword is zq%dx.", k, k)
			if k%2 == 0 {
				text += " I still drink green tea."
			}
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":%q},{"role":"assistant","content":"Noted (%d)."}`, text, k))
		}
		// The turns of a user are one append, so that they are in one
		// batch of the extraction: the held turn follows turns already
		// extracted.
		p.call(t, 201, "POST", "/v1/sessions/s-"+user+"/messages", "["+strings.Join(msgs, ",")+"]", nil)
	}
	select {
	case <-model.holding:
	case <-time.After(time.Minute):
		t.Fatalf("the extraction did not reach turn %d\n%s", model.held, p.stderr)
	}
	model.mu.Lock()
	before := len(model.answered)
	model.mu.Unlock()
	if before == 0 {
		t.Fatal("no turn was extracted before the held one: the test would show nothing")
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done

	model.mu.Lock()
	model.hold = false
	model.mu.Unlock()
	p = startServe(t, bin, nil, args...)
	// The new server extracts once the killed one's lease on the
	// extraction has expired.
	facts := map[string][]api.FactView{}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		done := 0
		for _, user := range users {
			var list api.FactsResponse
			p.call(t, 200, "GET", "/v1/users/"+user+"/facts", "", &list)
			facts[user] = list.Facts
			done += len(list.Facts) - 1
		}
		if done >= len(users)*perUser {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the extraction did not resume: %d of %d turns extracted\n%s", done, len(users)*perUser, p.stderr)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's state, bounded by the deadline
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done

	model.mu.Lock()
	defer model.mu.Unlock()
	for _, e := range model.errs {
		t.Error(e)
	}
	for k := range len(users) * perUser {
		if n := model.answered[k]; n != 1 {
			t.Errorf("the model answered the extraction of turn %d %d times, want once", k, n)
		}
	}
	for i, user := range users {
		count := map[string]int{}
		for _, f := range facts[user] {
			count[f.Text]++
		}
		want := 0
		for k := i * perUser; k < (i+1)*perUser; k++ {
			if n := count[codeword(k)]; n != 1 {
				t.Errorf("%s: turn %d's fact exists %d times, want once", user, k, n)
			}
			if k%2 == 0 {
				want++
			}
		}
		for _, f := range facts[user] {
			switch {
			case f.Text == "Drinks green tea." && f.Reinforcements != want:
				t.Errorf("%s: the tea was reinforced %d times by %d turns", user, f.Reinforcements, want)
			case f.Text != "Drinks green tea." && f.Reinforcements != 0:
				t.Errorf("%s: %q was reinforced %d times, by no turn", user, f.Text, f.Reinforcements)
			}
		}
	}
	t.Logf("%d turns extracted before the kill", before)
}
