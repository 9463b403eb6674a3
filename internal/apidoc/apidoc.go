// Package apidoc renders the server's OpenAPI document as a Markdown
// reference (docs/api.md): every route with its parameters, body and
// answers, then every schema with its members. The document is the one
// source; the reference is generated from it and a test keeps it current.
package apidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// doc is the part of an OpenAPI 3 document the reference shows.
type doc struct {
	Info struct {
		Title       string `json:"title"`
		Version     string `json:"version"`
		Description string `json:"description"`
	} `json:"info"`
	Tags []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tags"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas    map[string]*schema    `json:"schemas"`
		Parameters map[string]*parameter `json:"parameters"`
		Headers    map[string]*header    `json:"headers"`
		Responses  map[string]*response  `json:"responses"`
	} `json:"components"`
}

type operation struct {
	OperationID string       `json:"operationId"`
	Summary     string       `json:"summary"`
	Description string       `json:"description"`
	Tags        []string     `json:"tags"`
	Parameters  []*parameter `json:"parameters"`
	RequestBody *struct {
		Required    bool                  `json:"required"`
		Description string                `json:"description"`
		Content     map[string]*mediaType `json:"content"`
	} `json:"requestBody"`
	Responses map[string]*response `json:"responses"`
}

type parameter struct {
	Ref         string  `json:"$ref"`
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Required    bool    `json:"required"`
	Description string  `json:"description"`
	Schema      *schema `json:"schema"`
}

type header struct {
	Ref         string  `json:"$ref"`
	Description string  `json:"description"`
	Schema      *schema `json:"schema"`
}

type response struct {
	Ref         string                `json:"$ref"`
	Description string                `json:"description"`
	Content     map[string]*mediaType `json:"content"`
	Headers     map[string]*header    `json:"headers"`
}

type mediaType struct {
	Schema *schema `json:"schema"`
}

type schema struct {
	Ref         string             `json:"$ref"`
	Type        any                `json:"type"` // a string, or a list of them
	Format      string             `json:"format"`
	Description string             `json:"description"`
	Enum        []any              `json:"enum"`
	Items       *schema            `json:"items"`
	Properties  map[string]*schema `json:"properties"`
	Required    []string           `json:"required"`
	OneOf       []*schema          `json:"oneOf"`
	AnyOf       []*schema          `json:"anyOf"`
	AllOf       []*schema          `json:"allOf"`
	Additional  any                `json:"additionalProperties"`
	Minimum     *float64           `json:"minimum"`
	Maximum     *float64           `json:"maximum"`
	MaxLength   *int               `json:"maxLength"`
	Const       any                `json:"const"`
}

// methods are the HTTP methods of a path item, in the order shown.
var methods = []string{"get", "post", "put", "patch", "delete"}

// Render returns the Markdown reference of the OpenAPI document spec.
func Render(spec []byte) ([]byte, error) {
	var d doc
	if err := json.Unmarshal(spec, &d); err != nil {
		return nil, fmt.Errorf("apidoc: the OpenAPI document: %w", err)
	}
	type route struct {
		method, path string
		op           *operation
	}
	byTag := map[string][]route{}
	for path, item := range d.Paths {
		// Parameters of the path item apply to each of its operations.
		var shared []*parameter
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				return nil, fmt.Errorf("apidoc: %s: parameters: %w", path, err)
			}
		}
		for _, m := range methods {
			raw, ok := item[m]
			if !ok {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("apidoc: %s %s: %w", strings.ToUpper(m), path, err)
			}
			op.Parameters = append(slices.Clip(shared), op.Parameters...)
			tag := "other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			byTag[tag] = append(byTag[tag], route{m, path, &op})
		}
	}
	tags := make([]string, 0, len(d.Tags)+1)
	tagDesc := map[string]string{}
	for _, t := range d.Tags {
		tags = append(tags, t.Name)
		tagDesc[t.Name] = t.Description
	}
	for t := range byTag {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}

	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# HTTP API reference\n\n")
	p("<!-- Generated from server/openapi.json by internal/apidoc; do not edit.\n")
	p("     Regenerate: go test ./internal/apidoc -run TestReferenceIsCurrent -update -->\n\n")
	p("%s, API version %s. The server serves this document at `GET /v1/openapi.json`.\n\n", d.Info.Title, d.Info.Version)
	p("%s\n\n", d.Info.Description)
	p("## Routes\n\n| method | path | what it does |\n|---|---|---|\n")
	for _, t := range tags {
		rs := byTag[t]
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].path != rs[j].path {
				return rs[i].path < rs[j].path
			}
			return slices.Index(methods, rs[i].method) < slices.Index(methods, rs[j].method)
		})
		for _, r := range rs {
			p("| `%s` | [`%s`](#%s) | %s |\n", strings.ToUpper(r.method), r.path, anchor(r.method, r.path), cell(r.op.Summary))
		}
	}
	for _, t := range tags {
		rs := byTag[t]
		if len(rs) == 0 {
			continue
		}
		p("\n## %s\n", t)
		if desc := tagDesc[t]; desc != "" {
			p("\n%s\n", desc)
		}
		for _, r := range rs {
			op := r.op
			p("\n### <a id=\"%s\"></a>`%s %s`\n\n", anchor(r.method, r.path), strings.ToUpper(r.method), r.path)
			if op.Summary != "" {
				p("**%s.**", strings.TrimSuffix(op.Summary, "."))
				if op.Description != "" {
					p(" ")
				}
			}
			if op.Description != "" {
				p("%s", op.Description)
			}
			p("\n")
			if len(op.Parameters) > 0 {
				p("\n| parameter | in | required | type | description |\n|---|---|---|---|---|\n")
				for _, prm := range op.Parameters {
					prm = d.param(prm)
					p("| `%s` | %s | %s | %s | %s |\n", prm.Name, prm.In, yes(prm.Required), typeOf(prm.Schema), cell(prm.Description))
				}
			}
			if rb := op.RequestBody; rb != nil {
				p("\n**Body**")
				if !rb.Required {
					p(" (optional)")
				}
				p(": %s", contentTypes(rb.Content))
				if rb.Description != "" {
					p(". %s", rb.Description)
				}
				p("\n")
			}
			codes := make([]string, 0, len(op.Responses))
			for c := range op.Responses {
				codes = append(codes, c)
			}
			sort.Strings(codes)
			p("\n| status | answer |\n|---|---|\n")
			for _, c := range codes {
				resp := d.response(op.Responses[c])
				ans := cell(resp.Description)
				if ct := contentTypes(resp.Content); ct != "" {
					ans += " " + ct
				}
				p("| %s | %s |\n", c, strings.TrimSpace(ans))
			}
		}
	}

	p("\n## Schemas\n")
	names := make([]string, 0, len(d.Components.Schemas))
	for n := range d.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := d.Components.Schemas[n]
		p("\n### <a id=\"schema-%s\"></a>%s\n", strings.ToLower(n), n)
		if s.Description != "" {
			p("\n%s\n", s.Description)
		}
		if alts := alternatives(s); alts != "" {
			p("\nOne of: %s.\n", alts)
		}
		if len(s.Properties) == 0 {
			if len(s.OneOf)+len(s.AnyOf)+len(s.AllOf) == 0 {
				p("\nType: %s.\n", typeOf(s))
			}
			continue
		}
		p("\n| member | type | required | description |\n|---|---|---|---|\n")
		props := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			props = append(props, k)
		}
		sort.Slice(props, func(i, j int) bool {
			ri, rj := slices.Contains(s.Required, props[i]), slices.Contains(s.Required, props[j])
			if ri != rj {
				return ri
			}
			return props[i] < props[j]
		})
		for _, k := range props {
			ps := s.Properties[k]
			p("| `%s` | %s | %s | %s |\n", k, typeOf(ps), yes(slices.Contains(s.Required, k)), cell(ps.Description))
		}
	}
	return b.Bytes(), nil
}

// param resolves a parameter's $ref.
func (d *doc) param(prm *parameter) *parameter {
	if prm.Ref != "" {
		if r, ok := d.Components.Parameters[strings.TrimPrefix(prm.Ref, "#/components/parameters/")]; ok {
			return r
		}
	}
	return prm
}

// response resolves a response's $ref.
func (d *doc) response(r *response) *response {
	if r.Ref != "" {
		if res, ok := d.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]; ok {
			return res
		}
	}
	return r
}

// anchor is the link target of a route.
func anchor(method, path string) string {
	a := strings.ToLower(method) + strings.NewReplacer("/", "-", "{", "", "}", "", ".", "").Replace(path)
	return a
}

// contentTypes writes a body's media types with their schemas.
func contentTypes(content map[string]*mediaType) string {
	cts := make([]string, 0, len(content))
	for ct := range content {
		cts = append(cts, ct)
	}
	sort.Strings(cts)
	var out []string
	for _, ct := range cts {
		s := ct
		if m := content[ct]; m.Schema != nil {
			s += " " + typeOf(m.Schema)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// typeOf writes a schema's type: a link to a named schema, an array of
// something, a primitive with its format, enum or bounds.
func typeOf(s *schema) string {
	if s == nil {
		return "any"
	}
	if s.Ref != "" {
		n := s.Ref[strings.LastIndex(s.Ref, "/")+1:]
		return fmt.Sprintf("[%s](#schema-%s)", n, strings.ToLower(n))
	}
	if alts := alternatives(s); alts != "" {
		return alts
	}
	var t string
	switch v := s.Type.(type) {
	case string:
		t = v
	case []any:
		var ts []string
		for _, x := range v {
			ts = append(ts, fmt.Sprint(x))
		}
		t = strings.Join(ts, " or ")
	default:
		t = "any"
	}
	switch {
	case t == "array" && s.Items != nil:
		t = "array of " + typeOf(s.Items)
	case t == "object" && len(s.Properties) == 0 && s.Additional != nil:
		if as, ok := s.Additional.(map[string]any); ok {
			if at, ok := as["type"].(string); ok {
				t = "object of " + at
			}
		}
	}
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	if len(s.Enum) > 0 {
		var es []string
		for _, e := range s.Enum {
			es = append(es, fmt.Sprintf("`%v`", e))
		}
		t += ": " + strings.Join(es, ", ")
	}
	if s.Const != nil {
		t += fmt.Sprintf(": `%v`", s.Const)
	}
	switch {
	case s.Minimum != nil && s.Maximum != nil:
		t += fmt.Sprintf(", %v to %v", *s.Minimum, *s.Maximum)
	case s.Minimum != nil:
		t += fmt.Sprintf(", at least %v", *s.Minimum)
	case s.Maximum != nil:
		t += fmt.Sprintf(", at most %v", *s.Maximum)
	}
	if s.MaxLength != nil {
		t += fmt.Sprintf(", at most %d characters", *s.MaxLength)
	}
	return t
}

// alternatives writes a oneOf, anyOf or allOf.
func alternatives(s *schema) string {
	for _, alts := range []struct {
		list []*schema
		sep  string
	}{{s.OneOf, " or "}, {s.AnyOf, " or "}, {s.AllOf, " and "}} {
		if len(alts.list) == 0 {
			continue
		}
		var ts []string
		for _, a := range alts.list {
			ts = append(ts, typeOf(a))
		}
		return strings.Join(ts, alts.sep)
	}
	return ""
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// cell makes text fit one table cell: no newlines, no bare pipes.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
