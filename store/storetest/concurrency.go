package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/store"
)

func (s *suite) concurrencyTests() []namedTest {
	return []namedTest{
		{"ExpectedLastSeqWriters", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "hot"})
			g, n := s.cfg.Goroutines, s.cfg.AppendsEach
			var wg sync.WaitGroup
			errs := make(chan error, g)
			for w := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					last := int64(0)
					for i := range n {
						step := taskStep(fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("writer %d step %d", w, i))
						for attempt := 0; ; attempt++ {
							resp, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "hot", Steps: []agentmem.Step{step}, ExpectedLastSeq: &last})
							if err == nil {
								last = resp.LastSeq
								break
							}
							if !errors.Is(err, agentmem.ErrConflict) || attempt > 100*g {
								errs <- fmt.Errorf("writer %d step %d: %w", w, i, err)
								return
							}
							sess, err := e.st.Get(e.ctx, "", "hot")
							if err != nil {
								errs <- err
								return
							}
							last = sess.LastSeq
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			e.checkAllOnce("hot", g, n)
		}},
		{"SameStepsFromManyWriters", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "dup"})
			const writers, count = 4, 20
			all := steps("same", count)
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i, st := range all {
						resp, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "dup", Steps: []agentmem.Step{st}})
						if err != nil {
							errs <- err
							return
						}
						if resp.Seqs[0] != int64(i+1) {
							errs <- fmt.Errorf("step %d got seq %d, want %d", i, resp.Seqs[0], i+1)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			entries := e.entries("dup")
			e.wantSeqs(seqsOf(entries), seqRange(1, count), "log of steps appended by several writers at once")
		}},
		{"ManySessions", func(t *testing.T) {
			e := s.open(t)
			const sessions, count = 6, 15
			var wg sync.WaitGroup
			errs := make(chan error, sessions)
			for i := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("s%d", i)
					if _, err := e.st.Create(e.ctx, store.CreateRequest{ID: id}); err != nil {
						errs <- err
						return
					}
					for k := range count {
						resp, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: id, Steps: []agentmem.Step{taskStep(fmt.Sprintf("%s-%d", id, k), "x")}})
						if err != nil {
							errs <- err
							return
						}
						if resp.Seqs[0] != int64(k+1) {
							errs <- fmt.Errorf("%s step %d got seq %d", id, k, resp.Seqs[0])
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for i := range sessions {
				e.wantSeqs(seqsOf(e.entries(fmt.Sprintf("s%d", i))), seqRange(1, count), "session log")
			}
		}},
		{"ReadersSeeWholeAppends", func(t *testing.T) {
			e := s.open(t)
			e.create(store.CreateRequest{ID: "rw"})
			const batches, size = 20, 3
			done := make(chan struct{})
			errs := make(chan error, 2)
			go func() {
				defer close(done)
				for b := range batches {
					if _, err := e.st.Append(e.ctx, store.AppendRequest{SessionID: "rw", Steps: steps(fmt.Sprintf("b%d", b), size)}); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
			go func() {
				for {
					select {
					case <-done:
						errs <- nil
						return
					default:
					}
					resp, err := e.st.Read(e.ctx, store.ReadRequest{SessionID: "rw"})
					if err != nil {
						errs <- err
						return
					}
					n := int64(len(resp.Entries))
					if n%size != 0 || resp.Session.LastSeq < n {
						errs <- fmt.Errorf("a reader saw %d entries (LastSeq %d): part of an append", n, resp.Session.LastSeq)
						return
					}
					for i, en := range resp.Entries {
						if en.Seq != int64(i+1) {
							errs <- fmt.Errorf("a reader saw seq %d at position %d", en.Seq, i)
							return
						}
					}
				}
			}()
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
}

// checkAllOnce checks that session id holds exactly the steps w<g>-<i>
// for g < writers and i < each, once each, at seqs 1..writers*each.
func (e *env) checkAllOnce(id string, writers, each int) {
	e.t.Helper()
	entries := e.entries(id)
	e.wantSeqs(seqsOf(entries), seqRange(1, int64(writers*each)), "log after concurrent appends")
	seen := map[string]int64{}
	next := make([]int, writers)
	for _, en := range entries {
		sid := en.Step.Info().ID
		if prev, dup := seen[sid]; dup {
			e.t.Fatalf("step %s stored twice, at %d and %d", sid, prev, en.Seq)
		}
		seen[sid] = en.Seq
		var w, i int
		if _, err := fmt.Sscanf(sid, "w%d-%d", &w, &i); err != nil || w >= writers {
			e.t.Fatalf("unexpected step %q", sid)
		}
		if i != next[w] {
			e.t.Fatalf("writer %d: step %d stored after step %d", w, i, next[w]-1)
		}
		next[w]++
	}
	if len(seen) != writers*each {
		e.t.Fatalf("%d distinct steps, want %d", len(seen), writers*each)
	}
}
