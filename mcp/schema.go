package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The SDK infers a tool's input schema from its Go type: properties from
// json tags, descriptions from jsonschema tags, required from the fields
// without omitempty. Enums, bounds, patterns and defaults have no tag, so
// schemaFor infers the schema and a list of edits adds them.

// schemaFor returns the inferred JSON schema of T with edits applied.
func schemaFor[T any](edits ...edit) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	for _, e := range edits {
		if err := e(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// edit changes a schema.
type edit func(*jsonschema.Schema) error

// at applies changes to the property at path: property names, with "[]"
// for the items of an array.
func at(path string, changes ...func(*jsonschema.Schema)) edit {
	return func(root *jsonschema.Schema) error {
		s := root
		for _, name := range strings.Split(path, ".") {
			var next *jsonschema.Schema
			if name == "[]" {
				next = s.Items
			} else {
				next = s.Properties[name]
			}
			if next == nil {
				return fmt.Errorf("mcp: schema has no %q (at %q)", path, name)
			}
			s = next
		}
		for _, c := range changes {
			c(s)
		}
		return nil
	}
}

// enum restricts a string to values.
func enum(values ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		s.Enum = make([]any, len(values))
		for i, v := range values {
			s.Enum[i] = v
		}
	}
}

// array makes a slice's schema an array that cannot be null (a Go slice
// infers as "null or array").
func array(s *jsonschema.Schema) { s.Types, s.Type = nil, "array" }

// object makes a struct pointer's schema an object that cannot be null (a
// pointer infers as "null or object").
func object(s *jsonschema.Schema) { s.Types, s.Type = nil, "object" }

// optional makes every property of an object optional (a field without
// omitempty infers as required).
func optional(s *jsonschema.Schema) { s.Required = nil }

// describe sets a property's description (for the fields of a type whose
// struct tags are not this package's).
func describe(d string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Description = d }
}

// between bounds a number.
func between(lo, hi float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Minimum, s.Maximum = &lo, &hi }
}

// atLeast sets a number's minimum.
func atLeast(lo float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Minimum = &lo }
}

// length bounds a string's length in characters.
func length(lo, hi int) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.MinLength, s.MaxLength = &lo, &hi }
}

// items bounds an array's length.
func items(lo, hi int) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.MinItems, s.MaxItems = &lo, &hi }
}

// maxProperties bounds the number of an object's properties (a map's
// entries).
func maxProperties(n int) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.MaxProperties = &n }
}

// pattern restricts a string to a regular expression.
func pattern(re string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { s.Pattern = re }
}

// byDefault sets the value a missing property takes; the SDK fills it in
// before the handler runs.
func byDefault(v any) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		b, _ := json.Marshal(v) // only strings and numbers are passed
		s.Default = b
	}
}
