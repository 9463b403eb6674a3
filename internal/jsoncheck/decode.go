package jsoncheck

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// strict are the options of Decode. The JSON v2 decoder's defaults already
// refuse what Check and Fields refuse: invalid UTF-8, lone surrogate
// escapes, repeated keys, and members that match a field only in another
// letter case. Unknown members are refused too. A time.Duration is a
// number of nanoseconds, as encoding/json writes it.
var strict = jsonv2.JoinOptions(
	jsonv2.RejectUnknownMembers(true),
	jsonv1.FormatDurationAsNano(true),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// Decode decodes data, which must be exactly one JSON value (surrounding
// white space aside), into v (a pointer) in one pass. It refuses
// everything Check and Fields refuse:
//
//   - malformed JSON, and data after the value;
//   - invalid UTF-8, and a lone UTF-16 surrogate escape;
//   - a key repeated in an object;
//   - a member that names no field of the struct it decodes into exactly
//     (unknown, or matching only in another letter case);
//   - a value of the wrong JSON type for its field.
//
// It returns nil or an *Error naming where. A type that decodes itself (a
// json.Unmarshaler) may refuse its value. The *Error then wraps that
// type's error (errors.As finds it), and its Path names the value.
//
// It is what the decoders of outside input use on their hot paths. It
// reads the text once, where Check, encoding/json and Fields read it three
// times or more.
func Decode(data []byte, v any) error {
	err := jsonv2.Unmarshal(data, v, strict)
	if err == nil {
		return nil
	}
	return decodeError(data, err)
}

// decodeError turns an error of the JSON v2 decoder, decoding data, into
// an *Error.
func decodeError(data []byte, err error) error {
	var se *jsonv2.SemanticError
	var sy *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		path := pointerPath(se.JSONPointer)
		if errors.Is(se.Err, jsonv2.ErrUnknownName) {
			return &Error{Path: path, Offset: se.ByteOffset, Reason: unknownReason(se.GoType, se.JSONPointer.LastToken())}
		}
		var want string
		var form bool
		if se.GoType != nil {
			want, form = expected(se.GoType, se.JSONKind == scalarKind(se.GoType))
		}
		if se.Err != nil && !isV2Internal(se.Err) && !form {
			// A type that decodes itself refused its value.
			return &Error{Path: path, Offset: se.ByteOffset, Reason: se.Err.Error(), Err: se.Err}
		}
		if want == "" {
			want = "a valid value"
		}
		return &Error{Path: path, Offset: se.ByteOffset, Reason: fmt.Sprintf("must be %s, not %s", want, given(data, se))}
	case errors.As(err, &sy):
		path := pointerPath(sy.JSONPointer)
		at := sy.ByteOffset
		switch {
		case errors.Is(sy.Err, jsontext.ErrDuplicateName):
			return &Error{Path: path, Offset: at, Reason: "is a repeated key: the keys of a JSON object must be distinct"}
		case sy.Err != nil && strings.Contains(sy.Err.Error(), "invalid UTF-8"):
			return &Error{Path: path, Offset: at, Reason: fmt.Sprintf("is not valid UTF-8 (byte %d)", at)}
		case sy.Err != nil && strings.Contains(sy.Err.Error(), "surrogate"):
			return &Error{Path: path, Offset: at, Reason: fmt.Sprintf("has a lone UTF-16 surrogate escape (byte %d), which is not valid Unicode", at)}
		case sy.Err != nil && strings.Contains(sy.Err.Error(), "after top-level value"):
			return &Error{Offset: at, Reason: "has data after the JSON value"}
		case errors.Is(sy.Err, errUnexpectedEOF):
			return &Error{Offset: at, Reason: "is malformed JSON: it ends before the value does"}
		}
		return &Error{Offset: at, Reason: fmt.Sprintf("is malformed JSON at byte %d: %v", at, sy.Err)}
	}
	return &Error{Reason: "is malformed JSON: " + err.Error()}
}

// unknownReason says why key is not a member of the struct t: unknown,
// or matching a field only in another letter case.
func unknownReason(t reflect.Type, key string) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t.Kind() == reflect.Struct {
		for name := range structFields(t) {
			if strings.EqualFold(name, key) {
				return "is not a member: names are case-sensitive, and this one is " + strconv.Quote(name)
			}
		}
	}
	return "is an unknown member"
}

// errUnexpectedEOF is what the v2 decoder reports for a truncated text.
var errUnexpectedEOF = func() error {
	err := jsonv2.Unmarshal([]byte(`{`), new(any))
	var sy *jsontext.SyntacticError
	if errors.As(err, &sy) {
		return sy.Err
	}
	return err
}()

// isV2Internal reports whether err is one of the v2 decoder's own reasons
// for refusing a value (a number that does not fit, a bad format). Such an
// error is not one a json.Unmarshaler returned.
func isV2Internal(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) || errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange)
}

// pointerPath turns a JSON Pointer ("/steps/2/metadata/k") into Error's
// path form ("steps[2].metadata.k"). A token of digits is taken for an
// array index.
func pointerPath(p jsontext.Pointer) string {
	var b []byte
	for tok := range p.Tokens() {
		if isIndex(tok) {
			b = append(b, '[')
			b = append(b, tok...)
			b = append(b, ']')
			continue
		}
		b = appendKey(b, tok)
	}
	return string(b)
}

func isIndex(tok string) bool {
	if tok == "" || len(tok) > 9 {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

// expected says what a value of the Go type t must be, in the terms of a
// JSON client. It gives its kind and, where the type narrows it, its form
// ("a date and time in RFC 3339 form"). With inRange, it gives its range
// ("an integer from 0 to 255"): the value was a number, as the type takes,
// but out of its range. form reports a type of a form of its own that the
// decoder checks (a time), whose errors the description replaces.
func expected(t reflect.Type, inRange bool) (want string, form bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType:
		return `a date and time in RFC 3339 form, such as "2026-11-27T09:30:00Z"`, true
	case durationType:
		return "an integer number of nanoseconds", true
	}
	switch t.Kind() {
	case reflect.String:
		return "a string", false
	case reflect.Bool:
		return "true or false", false
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !inRange {
			return "an integer", false
		}
		bits := t.Bits()
		return fmt.Sprintf("an integer from %d to %d", -1<<(bits-1), 1<<(bits-1)-1), false
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if !inRange {
			return "an integer", false
		}
		return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<(t.Bits()-1)*2-1), false
	case reflect.Float32:
		if !inRange {
			return "a number", false
		}
		return fmt.Sprintf("a number from %.2g to %.2g", -math.MaxFloat32, math.MaxFloat32), false
	case reflect.Float64:
		return "a number", false
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string of base64", false
		}
		return "an array", false
	case reflect.Array:
		return fmt.Sprintf("an array of %d elements", t.Len()), false
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "an object of strings", false
		}
		return "an object", false
	case reflect.Struct:
		return "an object", false
	case reflect.Interface:
		return "a JSON value", false
	}
	return "", false
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
)

// scalarKind is the JSON kind of the values of t when they are numbers
// ('0') or strings ('"'), and 0 otherwise.
func scalarKind(t reflect.Type) jsontext.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return '0'
	case reflect.String:
		return '"'
	}
	if t == timeType {
		return '"'
	}
	return 0
}

// maxShown bounds the text of a refused value that an error quotes.
const maxShown = 40

// given describes the value a SemanticError refused. It is the value
// itself when it is a short number or string of the kind its type takes,
// since its range or form was wrong (1.5, "now"). Else it is its JSON kind
// ("a JSON object").
func given(data []byte, se *jsonv2.SemanticError) string {
	got := "a JSON value"
	if se.JSONKind != 0 {
		got = "a JSON " + kindName(se.JSONKind)
	}
	if se.GoType == nil || se.JSONKind != scalarKind(se.GoType) || se.ByteOffset < 0 || se.ByteOffset >= int64(len(data)) {
		return got
	}
	v, err := jsontext.NewDecoder(bytes.NewReader(data[se.ByteOffset:])).ReadValue()
	if err != nil || len(v) > maxShown || v.Kind() != se.JSONKind {
		return got
	}
	return string(v)
}

// kindName names a JSON kind.
func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// DecodeObject is Decode for data that must be a JSON object, such as a
// line of an export: anything else is refused with an *Error for the
// text as a whole.
func DecodeObject(data []byte, v any) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return &Error{Reason: "is not a JSON object"}
	}
	return Decode(data, v)
}
