package responses_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/responses"
)

// FuzzItems drives the item decoder with arbitrary item lists, appended
// as two requests split at split: it never panics, refuses only with
// ErrInvalid (or, for an output that contradicts a recorded one,
// ErrConflict), Check and ToMessages agree, and what it accepts comes
// back exactly, in order (outputs that repeat their call's result store
// nothing, as a retry, and are left out of that check). Seeds are in
// testdata/fuzz/FuzzItems.
func FuzzItems(f *testing.F) {
	f.Add([]byte(`[{"role":"user","content":"hi"},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"x"}]`), uint8(2))
	f.Add([]byte(`[{"type":"reasoning","summary":[]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"t"}]}]`), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return
		}
		strs := make([]string, len(items))
		for i, it := range items {
			strs[i] = string(it)
		}
		cut := min(int(split), len(strs))
		checkErr := responses.Check(items)
		s := &session{t: t}
		repeated := 0
		for _, req := range [][]string{strs[:cut], strs[cut:]} {
			if len(req) == 0 {
				continue
			}
			n, err := s.addCounting(req...)
			if err != nil {
				if !errors.Is(err, agentmem.ErrInvalid) && !errors.Is(err, agentmem.ErrConflict) {
					t.Fatalf("error wraps neither ErrInvalid nor ErrConflict: %v", err)
				}
				return
			}
			repeated += n
		}
		if checkErr != nil {
			t.Fatalf("Check refused what ToMessages accepted: %v", checkErr)
		}
		for _, st := range s.steps {
			if err := st.Validate(); err != nil {
				t.Fatalf("invalid step: %v", err)
			}
		}
		if repeated == 0 {
			s.wantItems(strs)
		}
	})
}
