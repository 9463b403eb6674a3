package server

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/api"
)

// TestOpenAPIComplete: the document is complete enough to generate a
// client from (clients/typescript does, and compiles it): it names its
// servers and security scheme; every route of the route table has its
// security (none for the open routes, the API key with a 401 answer for
// the others), exactly the query parameters the route takes, its path
// parameters, a success response, and error responses whose body is the
// error body.
func TestOpenAPIComplete(t *testing.T) {
	var doc struct {
		Servers    []map[string]any `json:"servers"`
		Security   []map[string]any `json:"security"`
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Parameters      map[string]param          `json:"parameters"`
			Responses       map[string]map[string]any `json:"responses"`
			SecuritySchemes map[string]any            `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) == 0 || doc.Servers[0]["url"] == nil {
		t.Error("no servers")
	}
	if doc.Components.SecuritySchemes["bearerAuth"] == nil || len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Error("no bearerAuth security scheme required by default")
	}
	// Every shared error response is the error body.
	for name, r := range doc.Components.Responses {
		ref, _ := at(t, r, "content.application/json.schema").(map[string]any)["$ref"].(string)
		if ref != "#/components/schemas/ErrorBody" {
			t.Errorf("components.responses.%s: schema %v, want the ErrorBody", name, ref)
		}
	}
	resolve := func(p param) param {
		if p.Ref != "" {
			return doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
		}
		return p
	}
	pathParam := regexp.MustCompile(`\{([a-z]+)\}`)
	e := newEnv(t)
	for _, rt := range e.srv.routeTable() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		item := doc.Paths[path]
		var op struct {
			Security   *[]map[string]any          `json:"security"`
			Parameters []param                    `json:"parameters"`
			Responses  map[string]json.RawMessage `json:"responses"`
		}
		if err := json.Unmarshal(item[strings.ToLower(method)], &op); err != nil {
			t.Errorf("%s: %v", rt.pattern, err)
			continue
		}
		var shared []param
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				t.Fatal(err)
			}
		}
		var query, inPath []string
		for _, p := range append(shared, op.Parameters...) {
			switch p = resolve(p); p.In {
			case "query":
				name := p.Name
				if p.Schema.Type == "array" { // repeatable: "name..." in the route table
					name += "..."
				}
				query = append(query, name)
			case "path":
				inPath = append(inPath, p.Name)
			}
		}
		slices.Sort(query)
		want := slices.Sorted(slices.Values(rt.params))
		if !rt.open && !slices.Equal(query, want) {
			t.Errorf("%s: query parameters %v in the document, %v in the route table", rt.pattern, query, want)
		}
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			if !slices.Contains(inPath, m[1]) {
				t.Errorf("%s: path parameter %s is not documented", rt.pattern, m[1])
			}
		}
		open := op.Security != nil && len(*op.Security) == 0
		if open != rt.open {
			t.Errorf("%s: open (security: []) %v in the document, %v in the route table", rt.pattern, open, rt.open)
		}
		if _, ok := op.Responses["401"]; !rt.open && !ok {
			t.Errorf("%s: needs a key but documents no 401", rt.pattern)
		}
		success := false
		for code, raw := range op.Responses {
			if code[0] == '2' {
				success = true
				continue
			}
			if rt.pattern == "GET /readyz" {
				continue // its 503 is its status body, as its 200
			}
			var r struct {
				Ref     string `json:"$ref"`
				Content struct {
					JSON struct {
						Schema struct {
							Ref string `json:"$ref"`
						} `json:"schema"`
					} `json:"application/json"`
				} `json:"content"`
			}
			err := json.Unmarshal(raw, &r)
			shared := strings.HasPrefix(r.Ref, "#/components/responses/")
			if err != nil || !shared && r.Content.JSON.Schema.Ref != "#/components/schemas/ErrorBody" {
				t.Errorf("%s: response %s is neither a shared error response nor the error body", rt.pattern, code)
			}
		}
		if !success {
			t.Errorf("%s: no success response", rt.pattern)
		}
	}
}

// param is a parameter of the OpenAPI document, or a reference to one.
type param struct {
	Ref    string `json:"$ref"`
	Name   string `json:"name"`
	In     string `json:"in"`
	Schema struct {
		Type string `json:"type"`
	} `json:"schema"`
}

// TestOpenAPIErrorCodes checks that the error schema enumerates every code
// of package api, no more, in its order.
func TestOpenAPIErrorCodes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := doc.Components.Schemas.Error.Properties.Code.Enum, api.Codes(); !slices.Equal(got, want) {
		t.Errorf("the error schema's codes:\n%v\nwant api.Codes():\n%v", got, want)
	}
}
