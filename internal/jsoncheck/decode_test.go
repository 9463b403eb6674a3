package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// decodeTarget has what the agentmem types have: nested structs, a map,
// a slice, pointers, and a field that decodes itself.
type decodeTarget struct {
	ID    string            `json:"id"`
	Name  string            `json:"name"`
	N     int               `json:"n"`
	Ptr   *decodeTarget     `json:"ptr"`
	Meta  map[string]string `json:"metadata"`
	Items []decodeTarget    `json:"items"`
	Self  *selfDecoder      `json:"self"`
	At    *time.Time        `json:"at"`
	Wait  time.Duration     `json:"wait"`
	Small uint8             `json:"small"`
	Vec   []float32         `json:"vec"`
}

type selfDecoder struct{ s string }

var errRefused = errors.New("refused by the type")

func (d *selfDecoder) UnmarshalJSON(b []byte) error {
	if string(b) == `"bad"` {
		return errRefused
	}
	d.s = string(b)
	return nil
}

// TestDecode: Decode refuses what Check and Fields refuse, in one pass,
// with the same paths and reasons.
func TestDecode(t *testing.T) {
	for _, c := range []struct {
		in     string
		path   string
		reason string // "": accepted
	}{
		{in: `{"id":"a","name":"n","n":3,"ptr":{"id":"b"},"metadata":{"Name":"x","NAME":"y"},"items":[{"id":"c"}],"self":"ok"}`},
		{in: ` {"id":null,"ptr":null} `},
		{in: `{"id":"\ud83d\ude00 C:\\ud800"}`},

		{in: `{"id":"a","id":"b"}`, path: "id", reason: "repeated key"},
		{in: `{"id":"a","\u0069d":"b"}`, path: "id", reason: "repeated key"},
		{in: `{"items":[{"id":"a"},{"metadata":{"k":"1","k":"2"}}]}`, path: "items[1].metadata.k", reason: "repeated key"},
		{in: `{"metadata":{"a b":"1","a b":"2"}}`, path: `metadata["a b"]`, reason: "repeated key"},

		{in: "{\"id\":\"ok\",\"name\":\"\xc3\"}", path: "name", reason: "not valid UTF-8"},
		{in: `{"items":[{"name":"\ud800"}]}`, path: "items[0].name", reason: "lone UTF-16 surrogate"},

		{in: `{"Name":"n"}`, path: "Name", reason: `case-sensitive, and this one is "name"`},
		{in: `{"ptr":{"ID":"b"}}`, path: "ptr.ID", reason: `this one is "id"`},
		{in: `{"items":[{"id":"a"},{"colour":"b"}]}`, path: "items[1].colour", reason: "unknown member"},

		{in: `{"n":"3"}`, path: "n", reason: "must be an integer, not a JSON string"},
		{in: `{"n":1.5}`, path: "n", reason: "must be an integer"},
		{in: `{"metadata":{"a":1}}`, path: "metadata.a", reason: "must be a string, not a JSON number"},
		{in: `{"items":{}}`, path: "items", reason: "must be an array, not a JSON object"},
		{in: `[]`, reason: "must be an object, not a JSON array"},
		{in: `{"n":1e30}`, path: "n", reason: "must be an integer from -9223372036854775808 to 9223372036854775807, not 1e30"},
		{in: `{"small":300}`, path: "small", reason: "must be an integer from 0 to 255, not 300"},
		{in: `{"small":-1}`, path: "small", reason: "must be an integer from 0 to 255, not -1"},
		{in: `{"vec":[1,1e39]}`, path: "vec[1]", reason: "must be a number from -3.4e+38 to 3.4e+38, not 1e39"},
		{in: `{"small":"` + strings.Repeat("9", 50) + `"}`, path: "small", reason: "must be an integer, not a JSON string"},
		{in: `{"small":` + strings.Repeat("9", 50) + `}`, path: "small", reason: "must be an integer from 0 to 255, not a JSON number"},
		{in: `{"at":"2026-11-27T09:30:00+01:00"}`},
		{in: `{"at":"now"}`, path: "at", reason: `must be a date and time in RFC 3339 form, such as "2026-11-27T09:30:00Z", not "now"`},
		{in: `{"at":"2026-11-27"}`, path: "at", reason: `RFC 3339 form, such as "2026-11-27T09:30:00Z", not "2026-11-27"`},
		{in: `{"at":"2026-11-27T25:00:00Z"}`, path: "at", reason: `RFC 3339 form`},
		{in: `{"at":{}}`, path: "at", reason: `RFC 3339 form, such as "2026-11-27T09:30:00Z", not a JSON object`},
		{in: `{"at":17}`, path: "at", reason: `RFC 3339 form, such as "2026-11-27T09:30:00Z", not a JSON number`},
		{in: `{"wait":"1s"}`, path: "wait", reason: `must be an integer number of nanoseconds, not a JSON string`},
		{in: `{"wait":1.5}`, path: "wait", reason: `must be an integer number of nanoseconds, not 1.5`},

		{in: `{"self":"bad"}`, path: "self", reason: "refused by the type"},

		{in: `{"id":`, reason: "malformed JSON"},
		{in: `hello`, reason: "malformed JSON"},
		{in: ``, reason: "malformed JSON"},
		{in: `{} {}`, reason: "data after the JSON value"},
		{in: `{}]`, reason: "data after the JSON value"},
		{in: `{"id" 1}`, reason: "malformed JSON"},
	} {
		var v decodeTarget
		err := Decode([]byte(c.in), &v)
		if c.reason == "" {
			if err != nil {
				t.Errorf("Decode(%q) = %v, want nil", c.in, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Decode(%q) = %v, want an *Error", c.in, err)
			continue
		}
		if e.Path != c.path || !strings.Contains(e.Reason, c.reason) {
			t.Errorf("Decode(%q) = path %q reason %q, want path %q and %q", c.in, e.Path, e.Reason, c.path, c.reason)
		}
	}
	var v decodeTarget
	if err := Decode([]byte(`{"self":"bad"}`), &v); !errors.Is(err, errRefused) {
		t.Errorf("a type's own error is not wrapped: %v", err)
	}
	if err := Decode([]byte(`{"id":"a","items":[{"id":"b","n":2}],"self":"x"}`), &v); err != nil || v.ID != "a" || len(v.Items) != 1 || v.Items[0].N != 2 || v.Self.s != `"x"` {
		t.Errorf("decoded %+v, %v", v, err)
	}
}

// FuzzDecode: Decode accepts exactly what the three passes it replaces
// accept (Check, encoding/json refusing unknown fields, Fields), and
// decodes it to the same value.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":"a","name":"n","n":3,"ptr":{"id":"b"},"metadata":{"k":"v"},"items":[{"id":"c"}]}`))
	f.Add([]byte(`{"id":"a","ID":"b"}`))
	f.Add([]byte(`{"metadata":{"a":"1","a":"2"}}`))
	f.Add([]byte(`{"n":1e2,"name":"\ud800"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got plainTarget
		err := Decode(data, &got)
		var want plainTarget
		old := Check(data)
		if old == nil {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			old = dec.Decode(&want)
		}
		if old == nil {
			old = Fields(data, reflect.TypeFor[plainTarget]())
		}
		if (err == nil) != (old == nil) {
			t.Fatalf("%q: Decode says %v, the old passes %v", data, err, old)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: Decode gave %+v, encoding/json %+v", data, got, want)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%q: %v is not an *Error", data, err)
			}
		}
	})
}

// plainTarget is decodeTarget without the type that decodes itself.
type plainTarget struct {
	ID    string            `json:"id"`
	Name  string            `json:"name"`
	N     int               `json:"n"`
	F     float64           `json:"f"`
	B     bool              `json:"b"`
	Ptr   *plainTarget      `json:"ptr"`
	Meta  map[string]string `json:"metadata"`
	Items []plainTarget     `json:"items"`
}
