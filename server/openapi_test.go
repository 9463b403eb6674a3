package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/store"
)

// openAPISchemas returns the component schemas of the OpenAPI document.
func openAPISchemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas    map[string]map[string]any `json:"schemas"`
			Parameters map[string]map[string]any `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	for name, p := range doc.Components.Parameters {
		doc.Components.Schemas["parameters/"+name] = p
	}
	return doc.Components.Schemas
}

// at follows a path of member names (and "items") from a schema; it fails
// the test if there is nothing there.
func at(t *testing.T, s map[string]any, path string) any {
	t.Helper()
	var v any = s
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: no %q", path, k)
		}
		if props, ok := m["properties"].(map[string]any); ok && props[k] != nil && k != "items" {
			v = props[k]
			continue
		}
		if v = m[k]; v == nil {
			t.Fatalf("%s: no %q", path, k)
		}
	}
	return v
}

// TestOpenAPILimits: the limits the OpenAPI document states are the ones
// the decoders and the stores enforce, constant by constant.
func TestOpenAPILimits(t *testing.T) {
	s := openAPISchemas(t)
	steps := []string{"SystemPromptStep", "TaskStep", "ActionStep", "PlanningStep", "ScratchpadStep", "FinalAnswerStep", "SummaryStep", "MessageStep"}
	want := map[string]int{
		"CreateSessionRequest.metadata.maxProperties":                  store.MaxMetadataKeys,
		"CreateSessionRequest.metadata.propertyNames.maxLength":        store.MaxFieldBytes,
		"CreateSessionRequest.metadata.additionalProperties.maxLength": store.MaxFieldBytes,
		"CreateSessionRequest.user_id.maxLength":                       store.MaxFieldBytes,
		"CreateSessionRequest.agent.maxLength":                         store.MaxFieldBytes,
		"CreateSessionRequest.ttl_seconds.maximum":                     maxTTLSeconds,
		"ForkRequest.metadata.maxProperties":                           store.MaxMetadataKeys,
		"ForkRequest.metadata.propertyNames.maxLength":                 store.MaxFieldBytes,
		"ForkRequest.ttl_seconds.maximum":                              maxTTLSeconds,
		"AppendStepsRequest.steps.maxItems":                            api.MaxStepsPerRequest,
		"RecallDocumentInput.metadata.maxProperties":                   recall.MaxMetadata,
		"RecallDocumentInput.metadata.propertyNames.maxLength":         recall.MaxMetaKeyLen,
		"RecallDocumentInput.metadata.additionalProperties.maxLength":  recall.MaxMetaValueLen,
		"RecallDocumentInput.id.maxLength":                             recall.MaxIDLen,
		"RecallDocumentInput.embedding.maxItems":                       recall.MaxDims,
		"UpsertRecallRequest.documents.maxItems":                       api.MaxRecallDocuments,
		"RememberRequest.metadata.maxProperties":                       facts.MaxMetadataKeys,
		"RememberRequest.metadata.propertyNames.maxLength":             facts.MaxFieldBytes,
		"RememberRequest.metadata.additionalProperties.maxLength":      facts.MaxFieldBytes,
		"RememberRequest.text.maxLength":                               facts.MaxTextBytes,
		"RememberRequest.supersedes.maxLength":                         facts.MaxFieldBytes,
		"FactPatch.text.maxLength":                                     facts.MaxTextBytes,
		"FactPatch.metadata.propertyNames.maxLength":                   facts.MaxFieldBytes,
		"FactPatch.metadata.additionalProperties.maxLength":            facts.MaxFieldBytes,
		"FactPatch.reason.maxLength":                                   MaxReasonBytes,
		"FactSource.session_id.maxLength":                              facts.MaxFieldBytes,
		"OpenAIMessage.id.maxLength":                                   store.MaxFieldBytes,
		"OpenAIMessage.metadata.maxProperties":                         store.MaxMetadataKeys,
		"OpenAIMessage.metadata.propertyNames.maxLength":               store.MaxFieldBytes,
		"OpenAIMessage.metadata.additionalProperties.maxLength":        store.MaxFieldBytes,
		"parameters/IdempotencyKey.schema.maxLength":                   maxIdempotencyKey,
		"AutoCompact.max_tokens.maximum":                               store.MaxAutoCompactTokens,
		"AutoCompact.keep_recent.maximum":                              store.MaxAutoCompactKeepRecent,
		"parameters/SessionID.schema.maxLength":                        store.MaxIDLen,
		"CreateSessionRequest.id.maxLength":                            store.MaxIDLen,
		"ForkRequest.id.maxLength":                                     store.MaxIDLen,
		"PutBlockRequest.limit.maximum":                                blocks.MaxLimit,
		"Block.limit.maximum":                                          blocks.MaxLimit,
		"PutBlockRequest.description.maxLength":                        blocks.MaxDescriptionBytes,
		"PutBlockRequest.by.maxLength":                                 blocks.MaxFieldBytes,
		"parameters/BlockLabel.schema.maxLength":                       blocks.MaxLabelBytes,
		"parameters/BlockUserID.schema.maxLength":                      blocks.MaxFieldBytes,
	}
	// The api package's copies of the blocks' limits, for clients.
	for name, pair := range map[string][2]int{
		"MaxBlockLimit": {api.MaxBlockLimit, blocks.MaxLimit}, "DefaultBlockLimit": {api.DefaultBlockLimit, blocks.DefaultLimit},
		"MaxBlockLabelBytes": {api.MaxBlockLabelBytes, blocks.MaxLabelBytes}, "MaxBlockDescriptionBytes": {api.MaxBlockDescriptionBytes, blocks.MaxDescriptionBytes},
		"MaxBlockHistory": {api.MaxBlockHistory, blocks.MaxHistory},
	} {
		if pair[0] != pair[1] {
			t.Errorf("api.%s is %d, package blocks says %d", name, pair[0], pair[1])
		}
	}
	for _, k := range steps {
		want[k+".metadata.maxProperties"] = store.MaxMetadataKeys
		want[k+".id.maxLength"] = store.MaxFieldBytes
	}
	for path, n := range want {
		name, rest, _ := strings.Cut(path, ".")
		if got := at(t, s[name], rest); got != float64(n) {
			t.Errorf("%s is %v in the document, %d in the code", path, got, n)
		}
	}
}

// TestOpenAPIStepRequired: each member the document marks required in a
// step's schema is required by the decoder of POST /steps: left out or
// null, the step is refused naming it.
func TestOpenAPIStepRequired(t *testing.T) {
	s := openAPISchemas(t)
	valid := map[string]string{
		"system_prompt": `{"type":"system_prompt","content":"s"}`,
		"task":          `{"type":"task","task":"t"}`,
		"action":        `{"type":"action","model_output":"o"}`,
		"planning":      `{"type":"planning","plan":"p"}`,
		"scratchpad":    `{"type":"scratchpad","content":"c"}`,
		"final_answer":  `{"type":"final_answer","answer":"a"}`,
		"summary":       `{"type":"summary","summary":"s","covers":[]}`,
		"message":       `{"type":"message","message":{"role":"user","content":"hi"}}`,
	}
	mapping := at(t, s["Step"], "discriminator.mapping").(map[string]any)
	if len(mapping) != len(valid) {
		t.Fatalf("the document has %d step kinds, the test %d", len(mapping), len(valid))
	}
	for kind, ref := range mapping {
		body, ok := valid[kind]
		if !ok {
			t.Fatalf("no valid %s step in the test", kind)
		}
		if _, e := decodeSteps([]byte(body), "", fixedNow, func() string { return "id" }); e != nil {
			t.Fatalf("%s: %v", body, e)
		}
		schema := s[strings.TrimPrefix(ref.(string), "#/components/schemas/")]
		for _, r := range schema["required"].([]any) {
			member := r.(string)
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatal(err)
			}
			if _, ok := m[member]; !ok {
				t.Fatalf("%s: the valid step lacks required %q", kind, member)
			}
			if member == "type" {
				continue // without it a step has no kind: refused as such
			}
			for _, variant := range []string{"missing", "null"} {
				if variant == "missing" {
					delete(m, member)
				} else {
					m[member] = json.RawMessage("null")
				}
				b, _ := json.Marshal(m)
				_, e := decodeSteps(b, "", fixedNow, func() string { return "id" })
				if e == nil || e.Status != 400 || e.Field != member {
					t.Errorf("%s with %s %s: %v, want 400 naming it", kind, member, variant, fmt.Sprint(e))
				}
			}
		}
	}
}

// TestOpenAPISessionSettings: the document's Pinning and AutoCompact have
// the members of the Go types, and the session and the requests that
// create one refer to them.
func TestOpenAPISessionSettings(t *testing.T) {
	s := openAPISchemas(t)
	for name, typ := range map[string]reflect.Type{"Pinning": reflect.TypeFor[agentmem.Pinning](), "AutoCompact": reflect.TypeFor[store.AutoCompact]()} {
		var want []string
		for f := range typ.Fields() {
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			want = append(want, tag)
		}
		var got []string
		for k := range at(t, s[name], "properties").(map[string]any) {
			got = append(got, k)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the document has %v, the Go type %v", name, got, want)
		}
	}
	for _, schema := range []string{"Session", "CreateSessionRequest", "ForkRequest"} {
		for member, ref := range map[string]string{"pinning": "Pinning", "auto_compact": "AutoCompact"} {
			if got := at(t, s[schema], member+".$ref"); got != "#/components/schemas/"+ref {
				t.Errorf("%s.%s refers to %v", schema, member, got)
			}
		}
		// A nullable boolean: absent (null) is the server's default, which
		// generated clients must tell from false.
		if got := fmt.Sprint(at(t, s[schema], "extract_facts.type")); got != "[boolean null]" {
			t.Errorf("%s.extract_facts is a %v", schema, got)
		}
	}
}
