// Package genkit plugs agentmem's recall search into Genkit
// (github.com/firebase/genkit/go) as a retriever. DefineRetriever
// registers one that searches the documents of the API key's tenant and
// the conversation turns of its sessions (GET /v1/recall/search). It
// searches on an agentmem server (`agentmem serve`), through the Go
// client, package github.com/agentmem/agentmem/client. Import it under
// another name than Genkit's own genkit package:
//
//	import amgenkit "github.com/agentmem/agentmem/adapters/genkit"
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey(os.Getenv("AGENTMEM_API_KEY")))
//	r, err := amgenkit.DefineRetriever(g, "agentmem/recall", c, client.RecallQuery{K: 5})
//	resp, err := genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs("where is the staging database?"))
//
// Genkit for Go (v1.4.0) has no indexer API. Documents go into the recall
// index with client.UpsertRecall, and the server indexes the turns of
// sessions as they are appended.
//
// # Depending on the adapter
//
// The adapter is a module of its own, so that agentmem's core module does
// not depend on Genkit. In this repository its go.mod replaces
// github.com/agentmem/agentmem by the repository's root (../..). So it is
// built and tested against the code beside it. It requires the core at the
// placeholder version v0.0.0-00010101000000-000000000000. A program
// outside the repository requires both modules, the core at the version
// the adapter was released with:
//
//	go get github.com/agentmem/agentmem/adapters/genkit@VERSION
//	go get github.com/agentmem/agentmem@VERSION
//
// A replace directive in the dependent module's own go.mod, pointing at a
// checkout, works too; replace directives of dependencies are ignored.
package genkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/adapters/internal/recalldoc"
	"github.com/agentmem/agentmem/client"
	"github.com/agentmem/agentmem/client/remote"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"
)

// RetrieverOptions are the options of one retrieval, given with
// ai.WithConfig as a *RetrieverOptions, a RetrieverOptions or their JSON
// object (as Genkit's developer UI sends it). A zero field keeps the
// retriever's setting.
type RetrieverOptions struct {
	// K is the number of hits.
	K int `json:"k,omitempty"`
	// Scope limits the search: "session:ID", "user:ID" or "agent:ID".
	Scope string `json:"scope,omitempty"`
	// Before and After ask for that many neighbouring turns of each
	// conversation turn found: the document's text is then the window's.
	Before int `json:"before,omitempty"`
	After  int `json:"after,omitempty"`
	// Fresh waits, bounded by the server, until the index has every
	// write the server acknowledged (read-your-writes).
	Fresh bool `json:"fresh,omitempty"`
}

// NewRetriever returns a Genkit retriever named name that searches with
// the settings of q (K, Scope, Before, After, Fresh). A retrieval's
// RetrieverOptions may change them. q's Text is ignored: each retrieval
// searches for the text of its query document. DefineRetriever registers
// it with Genkit too.
//
// The documents it returns come most relevant first. They hold the hit's
// text, or with a window the window's texts. Their metadata is the
// document's own and the keys "id", "score", "session_id" and "step" of a
// turn, "time" and "window" (see package recalldoc). Bad input (a query
// without text, an unknown scope, options that do not decode) is an error
// wrapping agentmem.ErrInvalid.
func NewRetriever(name string, c *client.Client, q client.RecallQuery) (ai.Retriever, error) {
	opts, fn, err := retrieverFunc(name, c, q)
	if err != nil {
		return nil, err
	}
	return ai.NewRetriever(name, opts, fn), nil
}

// DefineRetriever returns a retriever as NewRetriever does, registered
// with g under name.
func DefineRetriever(g *genkit.Genkit, name string, c *client.Client, q client.RecallQuery) (ai.Retriever, error) {
	opts, fn, err := retrieverFunc(name, c, q)
	if err != nil {
		return nil, err
	}
	return genkit.DefineRetriever(g, name, opts, fn), nil
}

// retrieverFunc checks the arguments of NewRetriever and returns the
// retriever's options and function.
func retrieverFunc(name string, c *client.Client, q client.RecallQuery) (*ai.RetrieverOptions, ai.RetrieverFunc, error) {
	if name == "" {
		return nil, nil, errors.New("agentmem genkit: a retriever needs a name")
	}
	if c == nil {
		return nil, nil, errors.New("agentmem genkit: a retriever needs a client")
	}
	q.Text = ""
	opts := &ai.RetrieverOptions{Label: "agentmem recall", ConfigSchema: core.InferSchemaMap(RetrieverOptions{})}
	return opts, func(ctx context.Context, req *ai.RetrieverRequest) (*ai.RetrieverResponse, error) {
		return retrieve(ctx, c, q, req)
	}, nil
}

// retrieve serves one retrieval.
func retrieve(ctx context.Context, c *client.Client, q client.RecallQuery, req *ai.RetrieverRequest) (*ai.RetrieverResponse, error) {
	if req.Query == nil {
		return nil, &agentmem.InvalidError{Field: "query", Reason: "is required"}
	}
	var text strings.Builder
	for _, p := range req.Query.Content {
		if p.IsText() {
			text.WriteString(p.Text)
		}
	}
	q.Text = text.String()
	o, err := options(req.Options)
	if err != nil {
		return nil, err
	}
	if o.K != 0 {
		q.K = o.K
	}
	if o.Scope != "" {
		q.Scope = o.Scope
	}
	if o.Before != 0 {
		q.Before = o.Before
	}
	if o.After != 0 {
		q.After = o.After
	}
	q.Fresh = q.Fresh || o.Fresh
	hits, err := c.SearchRecall(ctx, q)
	if err != nil {
		return nil, remote.MapError(err)
	}
	resp := &ai.RetrieverResponse{Documents: make([]*ai.Document, len(hits))}
	for i, d := range recalldoc.FromHits(hits) {
		resp.Documents[i] = ai.DocumentFromText(d.Content, d.Metadata)
	}
	return resp, nil
}

// options decodes a retrieval's options.
func options(v any) (RetrieverOptions, error) {
	switch o := v.(type) {
	case nil:
		return RetrieverOptions{}, nil
	case *RetrieverOptions:
		if o == nil {
			return RetrieverOptions{}, nil
		}
		return *o, nil
	case RetrieverOptions:
		return o, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return RetrieverOptions{}, &agentmem.InvalidError{Field: "options", Reason: err.Error()}
	}
	var o RetrieverOptions
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return RetrieverOptions{}, &agentmem.InvalidError{Field: "options", Reason: fmt.Sprintf("%T is not agentmem's retriever options: %v", v, err)}
	}
	return o, nil
}
