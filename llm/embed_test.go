package llm

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// embedServer answers each input "in-N" with the vector [N, -N], listing
// the data in reverse order so the client must sort by index.
func embedServer(t *testing.T, batches *[][]string, mu *sync.Mutex) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decode: %v", err)
		}
		if req.Model != "embed-model" {
			t.Errorf("model = %q", req.Model)
		}
		mu.Lock()
		*batches = append(*batches, req.Input)
		mu.Unlock()
		var data []string
		for i := len(req.Input) - 1; i >= 0; i-- {
			n, err := strconv.Atoi(strings.TrimPrefix(req.Input[i], "in-"))
			if err != nil {
				t.Errorf("input %q", req.Input[i])
			}
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[%d,%d]}`, i, n, -n))
		}
		writeJSON(t, w, 200, `{"object":"list","model":"embed-model","data":[`+strings.Join(data, ",")+`],"usage":{"prompt_tokens":1,"total_tokens":1}}`)
	}
}

func TestEmbedOrderAndBatching(t *testing.T) {
	var batches [][]string
	var mu sync.Mutex
	c, _ := newTestClient(t, embedServer(t, &batches, &mu), Config{EmbeddingModel: "embed-model", EmbedBatchSize: 3})
	var inputs []string
	for i := range 7 {
		inputs = append(inputs, fmt.Sprintf("in-%d", i))
	}
	got, err := c.Embed(context.Background(), inputs)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(got) != len(inputs) {
		t.Fatalf("got %d vectors, want %d", len(got), len(inputs))
	}
	for i, v := range got {
		if len(v) != 2 || v[0] != float32(i) || v[1] != -float32(i) {
			t.Errorf("vector %d = %v, want [%d %d]", i, v, i, -i)
		}
	}
	if m := c.EmbeddingModel(); m != "embed-model" {
		t.Errorf("EmbeddingModel() = %q, want the model the vectors came from", m)
	}
	wantBatches := [][]string{{"in-0", "in-1", "in-2"}, {"in-3", "in-4", "in-5"}, {"in-6"}}
	if fmt.Sprint(batches) != fmt.Sprint(wantBatches) {
		t.Errorf("batches = %v, want %v", batches, wantBatches)
	}
}

func TestEmbedDefaultBatchSize(t *testing.T) {
	var batches [][]string
	var mu sync.Mutex
	c, _ := newTestClient(t, embedServer(t, &batches, &mu), Config{EmbeddingModel: "embed-model"})
	inputs := make([]string, DefaultEmbedBatchSize+1)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("in-%d", i)
	}
	got, err := c.Embed(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(inputs) || got[DefaultEmbedBatchSize][0] != DefaultEmbedBatchSize {
		t.Errorf("bad result: %d vectors", len(got))
	}
	if len(batches) != 2 || len(batches[0]) != DefaultEmbedBatchSize || len(batches[1]) != 1 {
		t.Errorf("batch sizes wrong: %d batches", len(batches))
	}
}

func TestEmbedEmptyInputsNoRequest(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }, Config{EmbeddingModel: "e"})
	got, err := c.Embed(context.Background(), nil)
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("Embed(nil) = %v, %v; want empty, nil", got, err)
	}
	if calls.Load() != 0 {
		t.Error("server called for no inputs")
	}
}

func TestEmbedNoModel(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {}, Config{})
	if _, err := c.Embed(context.Background(), []string{"a"}); !errors.Is(err, ErrConfig) {
		t.Errorf("err = %v, want ErrConfig", err)
	}
}

func TestEmbedBase64(t *testing.T) {
	enc := func(fs ...float32) string {
		b := make([]byte, 4*len(fs))
		for i, f := range fs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, 200, `{"data":[{"index":1,"embedding":"`+enc(3, 4.5)+`"},{"index":0,"embedding":"`+enc(1, -2)+`"}]}`)
	}, Config{EmbeddingModel: "e"})
	got, err := c.Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[[1 -2] [3 4.5]]" {
		t.Errorf("got %v", got)
	}
}

func TestEmbedMissingIndexMeansOrder(t *testing.T) {
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, 200, `{"data":[{"embedding":[1]},{"embedding":[2]}]}`)
	}, Config{EmbeddingModel: "e"})
	got, err := c.Embed(context.Background(), []string{"a", "b"})
	if err != nil || fmt.Sprint(got) != "[[1] [2]]" {
		t.Errorf("got %v, %v", got, err)
	}
}

func TestEmbedMalformed(t *testing.T) {
	tests := map[string]string{
		"too few":          `{"data":[{"index":0,"embedding":[1]}]}`,
		"duplicate index":  `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`,
		"index too big":    `{"data":[{"index":0,"embedding":[1]},{"index":2,"embedding":[2]}]}`,
		"negative index":   `{"data":[{"index":-1,"embedding":[1]},{"index":0,"embedding":[2]}]}`,
		"empty vector":     `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[2]}]}`,
		"dimension change": `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[2]}]}`,
		"bad base64":       `{"data":[{"index":0,"embedding":"!!"},{"index":1,"embedding":[2]}]}`,
		"not json":         `data: nope`,
	}
	for name, body := range tests {
		t.Run(name, func(t *testing.T) {
			c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				writeJSON(t, w, 200, body)
			}, Config{EmbeddingModel: "e"})
			_, err := c.Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, ErrMalformedResponse) {
				t.Errorf("err = %v, want ErrMalformedResponse", err)
			}
		})
	}
}

func TestEmbedAPIErrorStopsBatches(t *testing.T) {
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(t, w, 400, `{"error":{"message":"input too long","type":"invalid_request_error"}}`)
	}, Config{EmbeddingModel: "e", EmbedBatchSize: 1})
	_, err := c.Embed(context.Background(), []string{"a", "b", "c"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("err = %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("calls = %d, want 1", n)
	}
}
