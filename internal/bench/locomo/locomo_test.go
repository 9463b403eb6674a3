package locomo

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"slices"
	"testing"
)

func decodeFile(t *testing.T, name string) []Conversation {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	convs, err := DecodeLoCoMo(f)
	if err != nil {
		t.Fatal(err)
	}
	return convs
}

func TestDecodeLoCoMo(t *testing.T) {
	convs := decodeFile(t, "testdata/tiny.json")
	if len(convs) != 1 || convs[0].ID != "tiny-1" {
		t.Fatalf("decoded %+v", convs)
	}
	c := convs[0]
	var got []string
	for _, tr := range c.Turns {
		got = append(got, tr.DiaID)
	}
	if want := []string{"D1:1", "D1:2", "D1:3", "D2:1", "D2:2"}; !slices.Equal(got, want) {
		t.Errorf("turn order %v, want %v", got, want)
	}
	want := Turn{DiaID: "D1:3", Session: 1, Speaker: "Alice", Date: "1 May, 2023", Text: "He is a beagle.", Caption: "a photo of a beagle on grass"}
	if c.Turns[2] != want {
		t.Errorf("turn 3 = %+v, want %+v", c.Turns[2], want)
	}
	if got := TurnText(c.Turns[2]); got != "Alice: He is a beagle. [image: a photo of a beagle on grass] (1 May, 2023)" {
		t.Errorf("TurnText = %q", got)
	}
	if len(c.Questions) != 6 || c.Questions[5].Category != 5 || c.Questions[2].Text != "What does Alice play?" {
		t.Errorf("questions %+v", c.Questions)
	}
}

// The decoder must not read the forbidden fields: a fixture that holds
// them, with values of types no string field would accept, decodes to the
// same conversations as the clean one.
func TestDecodeIgnoresForbiddenFields(t *testing.T) {
	clean := decodeFile(t, "testdata/tiny.json")
	poisoned := decodeFile(t, "testdata/tiny_poisoned.json")
	if !reflect.DeepEqual(clean, poisoned) {
		t.Errorf("poisoned fixture decodes differently:\n%+v\n%+v", poisoned, clean)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[locomoSample](), reflect.TypeFor[locomoQA](), reflect.TypeFor[locomoTurn]()} {
		for f := range typ.Fields() {
			switch f.Tag.Get("json") {
			case "observation", "session_summary", "event_summary", "answer", "adversarial_answer":
				t.Errorf("%s has the forbidden field %s", typ, f.Name)
			}
		}
	}
}

func TestParseEvidence(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
	}{
		{[]string{"D1:3"}, []string{"D1:3"}},
		{[]string{"D8:6; D9:17"}, []string{"D8:6", "D9:17"}},
		{[]string{"D:11:26"}, []string{"D11:26"}},
		{[]string{"D01:003", "D1:3", "D2:1"}, []string{"D1:3", "D2:1"}},
		{[]string{"garbage", "D:", "D1", "d1:2", ""}, nil},
		{[]string{"D1:2D3:4 and D5:6,D7:8"}, []string{"D1:2", "D3:4", "D5:6", "D7:8"}},
		{[]string{"D99999999999999999999:1"}, nil},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := ParseEvidence(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("ParseEvidence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// The figures, by hand (see testdata/tiny.json): four questions have
// evidence ids. "When did Alice adopt a puppy?" finds D1:1 first and D1:3
// in its four hits (1/2 at k=1, 1 at k=5); "Which instrument is Bob
// learning?" finds D2:1 first (1, 1); "What does Alice play?" finds D2:2
// first but D9:9 names no turn (1/2, 1/2); "What color is the sky on
// Mars?" matches no turn (0, 0). The two questions without ids are
// skipped.
func TestEvaluate(t *testing.T) {
	for _, file := range []string{"testdata/tiny.json", "testdata/tiny_poisoned.json"} {
		rep, err := Evaluate(context.Background(), decodeFile(t, file), []int{5, 1, 5}, EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := Report{
			Questions: 4,
			K:         []int{1, 5},
			Unit:      UnitTurn,
			Recall:    map[string]float64{"1": 0.5, "5": 0.625},
			ByCategory: map[string]CategoryReport{
				"1": {Questions: 2, Recall: map[string]float64{"1": 0.75, "5": 0.75}},
				"2": {Questions: 1, Recall: map[string]float64{"1": 0.5, "5": 1}},
				"5": {Questions: 1, Recall: map[string]float64{"1": 0, "5": 0}},
			},
		}
		if !reflect.DeepEqual(rep, want) {
			t.Errorf("%s: Evaluate = %+v, want %+v", file, rep, want)
		}
	}
	if _, err := Evaluate(context.Background(), nil, []int{0, 5}, EvalOptions{}); err == nil {
		t.Errorf("Evaluate accepted k=0")
	}
	if _, err := Evaluate(context.Background(), nil, nil, EvalOptions{}); err == nil {
		t.Errorf("Evaluate accepted no k")
	}
}

func TestDecodeLoCoMoErrors(t *testing.T) {
	for _, in := range []string{
		``, `{}`, `[{"qa": [{"evidence": "D1:1"}]}]`, `[{"qa": [{"evidence": [1]}]}]`,
		`[{"conversation": {"session_1": "x"}}]`, `[{"conversation": {"session_1": [], "session_1_date_time": 5}}]`,
		`[{"conversation": {"session_99999999999999999999": []}}]`,
	} {
		if _, err := DecodeLoCoMo(bytes.NewReader([]byte(in))); err == nil {
			t.Errorf("DecodeLoCoMo(%q) succeeded", in)
		}
	}
}

func FuzzDecodeLoCoMo(f *testing.F) {
	for _, name := range []string{"testdata/tiny.json", "testdata/tiny_poisoned.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		convs, err := DecodeLoCoMo(bytes.NewReader(data))
		if err != nil {
			return
		}
		rep, err := Evaluate(context.Background(), convs, []int{1, 3}, EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Recall {
			if math.IsNaN(r) || r < 0 || r > 1 {
				t.Fatalf("recall %v out of [0, 1]", r)
			}
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatal(err)
		}
	})
}
