package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/agentmem/agentmem"
)

// A Client is an agentmem.Embedder: recall, facts and MMR embed with it.
var _ agentmem.Embedder = (*Client)(nil)

type embedRequestWire struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embedResponseWire struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding embeddingVector `json:"embedding"`
	} `json:"data"`
}

// embeddingVector decodes an embedding sent either as a JSON array of
// numbers or, as with encoding_format "base64", as a base64 string of
// little-endian float32s.
type embeddingVector []float32

func (v *embeddingVector) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '"' {
		var f []float32
		if err := json.Unmarshal(data, &f); err != nil {
			return err
		}
		*v = f
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("base64 embedding: %w", err)
	}
	if len(raw)%4 != 0 {
		return fmt.Errorf("base64 embedding: %d bytes is not a whole number of float32s", len(raw))
	}
	f := make([]float32, len(raw)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	*v = f
	return nil
}

// EmbeddingModel returns Config.EmbeddingModel, the model Embed uses.
func (c *Client) EmbeddingModel() string { return c.cfg.EmbeddingModel }

// Embed returns one embedding per input, in input order, using
// Config.EmbeddingModel (POST {BaseURL}/embeddings). Inputs are sent in
// batches of at most Config.EmbedBatchSize, one request after another;
// each response is put back in order by its "index" field. No inputs means
// no request and an empty result.
//
// It fails with an error wrapping ErrConfig when Config.EmbeddingModel is
// empty, and with an *APIError for an error response. It fails with an
// error wrapping ErrMalformedResponse when the embeddings differ in
// dimension, or when a response does not carry exactly one embedding per
// input (each index once).
func (c *Client) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	if c.cfg.EmbeddingModel == "" {
		return nil, fmt.Errorf("%w: no embedding model: set Config.EmbeddingModel", ErrConfig)
	}
	out := make([][]float32, 0, len(inputs))
	dim := -1
	for start := 0; start < len(inputs); start += c.batchSize {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("llm: embeddings: %w", err)
		}
		batch := inputs[start:min(start+c.batchSize, len(inputs))]
		var resp embedResponseWire
		if err := c.post(ctx, "embeddings", embedRequestWire{Model: c.cfg.EmbeddingModel, Input: batch}, &resp); err != nil {
			return nil, err
		}
		if len(resp.Data) != len(batch) {
			return nil, fmt.Errorf("%w: embeddings: got %d embeddings for %d inputs", ErrMalformedResponse, len(resp.Data), len(batch))
		}
		vecs := make([][]float32, len(batch))
		for i, d := range resp.Data {
			idx := i // a server that omits index lists them in order
			if d.Index != nil {
				idx = *d.Index
			}
			if idx < 0 || idx >= len(batch) {
				return nil, fmt.Errorf("%w: embeddings: index %d out of range [0,%d)", ErrMalformedResponse, idx, len(batch))
			}
			if vecs[idx] != nil {
				return nil, fmt.Errorf("%w: embeddings: index %d appears twice", ErrMalformedResponse, idx)
			}
			if len(d.Embedding) == 0 {
				return nil, fmt.Errorf("%w: embeddings: index %d has an empty embedding", ErrMalformedResponse, idx)
			}
			if dim < 0 {
				dim = len(d.Embedding)
			} else if len(d.Embedding) != dim {
				return nil, fmt.Errorf("%w: embeddings: index %d has dimension %d, want %d", ErrMalformedResponse, idx, len(d.Embedding), dim)
			}
			vecs[idx] = d.Embedding
		}
		out = append(out, vecs...)
	}
	return out, nil
}
