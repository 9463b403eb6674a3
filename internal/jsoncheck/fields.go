package jsoncheck

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Fields checks the member names of a JSON text against the Go type it
// decodes into. Every member of an object that decodes into a struct must
// name one of the struct's fields exactly. encoding/json also takes a name
// that differs in letter case ("Task" for "task"), so that two members can
// set one field, the last winning. With DisallowUnknownFields it refuses
// only names that match no field in any case. Fields refuses both, naming
// the member: Reason is "is an unknown member" or says which name it
// should be.
//
// It follows the value into the structs, maps, slices and pointers of t.
// It stops at a type that decodes itself (json.Unmarshaler,
// encoding.TextUnmarshaler, json.RawMessage) or an interface: such a type
// checks its own text, with Fields on the type it decodes into. data must
// be valid JSON (call Fields after decoding it); it returns nil or an
// *Error.
func Fields(data []byte, t reflect.Type) error {
	var w fieldWalk
	return w.check(data, t)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports whether values of t decode their own JSON.
func decodesItself(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

// fieldWalk walks a text and its type together; path holds where it is,
// rendered only for an error.
type fieldWalk struct {
	path []step
}

// step is a member (key) or an element (index) of a path.
type step struct {
	key   []byte
	index int
}

func (w *fieldWalk) errorAt(key []byte, reason string) error {
	var b []byte
	for _, s := range w.path {
		if s.key == nil {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(s.index), 10)
			b = append(b, ']')
		} else {
			b = appendKey(b, string(s.key))
		}
	}
	return &Error{Path: string(appendKey(b, string(key))), Reason: reason}
}

func (w *fieldWalk) check(data []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(w.path) > 0 && decodesItself(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		names := structFields(t)
		return members(data, func(key, raw []byte) error {
			ft, ok := names[string(key)]
			if !ok {
				for name := range names {
					if strings.EqualFold(name, string(key)) {
						return w.errorAt(key, "is not a member: names are case-sensitive, and this one is "+strconv.Quote(name))
					}
				}
				return w.errorAt(key, "is an unknown member")
			}
			return w.in(step{key: key}, raw, ft)
		})
	case reflect.Map:
		if !needsCheck(t.Elem()) {
			return nil
		}
		return members(data, func(key, raw []byte) error {
			return w.in(step{key: key}, raw, t.Elem())
		})
	case reflect.Slice, reflect.Array:
		if !needsCheck(t.Elem()) {
			return nil
		}
		return elements(data, func(i int, raw []byte) error {
			return w.in(step{index: i}, raw, t.Elem())
		})
	}
	return nil
}

// in checks raw, of type t, at s below the current path.
func (w *fieldWalk) in(s step, raw []byte, t reflect.Type) error {
	w.path = append(w.path, s)
	err := w.check(raw, t)
	w.path = w.path[:len(w.path)-1]
	return err
}

// needsCheck reports whether values of t may hold objects to check.
func needsCheck(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		return !decodesItself(t)
	}
	return false
}

// fieldCache maps a struct type to its JSON member names and their types.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// structFields returns the JSON member names of a struct type, as
// encoding/json names them. A name is the json tag's name or the field's,
// for exported fields only. The fields of untagged embedded structs (or
// pointers to them) are inlined, and the shallowest field wins a name.
func structFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	names := map[string]reflect.Type{}
	level := []reflect.Type{t}
	seen := map[reflect.Type]bool{}
	for len(level) > 0 {
		found := map[string]reflect.Type{}
		var next []reflect.Type
		for _, st := range level {
			if seen[st] {
				continue
			}
			seen[st] = true
			for i := range st.NumField() {
				sf := st.Field(i)
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
				if tag == "-" && sf.Tag.Get("json") == "-" {
					continue
				}
				if sf.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
					next = append(next, ft)
					continue
				}
				if !sf.IsExported() {
					continue
				}
				name := tag
				if name == "" {
					name = sf.Name
				}
				if _, ok := found[name]; !ok {
					found[name] = sf.Type
				}
			}
		}
		for name, ft := range found {
			if _, ok := names[name]; !ok {
				names[name] = ft
			}
		}
		level = next
	}
	fieldCache.Store(t, names)
	return names
}

// members calls fn with each member of the JSON object data, in order.
// data that is not an object (null, a type the decoder refused) has none.
func members(data []byte, fn func(key, raw []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil
	}
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] == '"' {
		end := stringEnd(data, i)
		key := unquote(data[i:end], bytes.IndexByte(data[i:end], '\\') >= 0)
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the colon
		vEnd := valueEnd(data, i)
		if err := fn(key, data[i:vEnd]); err != nil {
			return err
		}
		i = skipSpace(data, vEnd)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return nil
}

// elements calls fn with each element of the JSON array data, in order.
func elements(data []byte, fn func(i int, raw []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil
	}
	i = skipSpace(data, i+1)
	for n := 0; i < len(data) && data[i] != ']'; n++ {
		end := valueEnd(data, i)
		if err := fn(n, data[i:end]); err != nil {
			return err
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return nil
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the offset just after the JSON value that starts at
// d[i].
func valueEnd(d []byte, i int) int {
	if i >= len(d) {
		return i
	}
	switch d[i] {
	case '"':
		return stringEnd(d, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(d); j++ {
			switch d[j] {
			case '"':
				j = stringEnd(d, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(d)
	}
	for i < len(d) && !delimiter(d[i]) {
		i++
	}
	return i
}

// Members calls fn with the key (unescaped) and the raw value of each
// member of the JSON object data, in order, without decoding them. data
// that is not an object has none. data must be valid JSON: call it only on
// what Check accepted.
func Members(data []byte, fn func(key, raw []byte) error) error { return members(data, fn) }

// Elements calls fn with each element of the JSON array data, raw, in
// order; data that is not an array has none. data must be valid JSON, as
// for Members.
func Elements(data []byte, fn func(i int, raw []byte) error) error { return elements(data, fn) }

// ValueEnd returns the offset just after the JSON value that starts at
// data[i]. It judges by the value's first byte and, for strings, objects
// and arrays, by the quotes and brackets that end it: it does not check
// the value. On any input it returns an offset from i to len(data), i when
// data[i] starts no value. So a caller that checks what it skips over may
// scan unchecked input with it.
func ValueEnd(data []byte, i int) int { return valueEnd(data, i) }
