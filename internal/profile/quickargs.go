package profile

import (
	"encoding/json"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// quickArgs checks tool arguments against the common shape of our input
// schemas, an object of strings, integers, booleans, string maps and string
// lists, without decoding them into map[string]any the way the schema
// validator needs: on the path of every send and wait that decode and the
// validation were a third of the typed adapter's CPU. It answers "valid" or
// "not sure"; when not sure, the schema validates (and words the error), so
// it must never pass what the schema would refuse.
type quickArgs struct {
	props    map[string]quickProp
	required []string
}

type quickProp struct {
	kind byte     // 's' string, 'i' integer, 'b' boolean, 'm' string map, 'a' string list
	enum []string // allowed strings, if any
}

// newQuickArgs returns the quick check of an input schema, or nil when the
// schema says anything it does not know (then every call is validated by the
// schema). It reads the schema as JSON, so that any keyword it does not know
// disqualifies the schema rather than passing unchecked.
func newQuickArgs(s *jsonschema.Schema) *quickArgs {
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var top map[string]any
	if json.Unmarshal(b, &top) != nil || !only(top, "type", "properties", "required", "additionalProperties", "description") ||
		top["type"] != "object" || top["additionalProperties"] != false {
		return nil
	}
	q := &quickArgs{props: map[string]quickProp{}}
	for _, r := range asList(top["required"]) {
		name, ok := r.(string)
		if !ok {
			return nil
		}
		q.required = append(q.required, name)
	}
	props, _ := top["properties"].(map[string]any)
	for name, ps := range props {
		p, ok := ps.(map[string]any)
		if !ok || !only(p, "type", "description", "enum", "items", "additionalProperties") {
			return nil
		}
		var qp quickProp
		switch p["type"] {
		case "string":
			qp.kind = 's'
		case "integer":
			qp.kind = 'i'
		case "boolean":
			qp.kind = 'b'
		case "object":
			qp.kind = 'm'
		case "array":
			qp.kind = 'a'
		default:
			return nil
		}
		stringSchema := map[string]any{"type": "string"}
		switch {
		case qp.kind == 'm' && !equalJSON(p["additionalProperties"], stringSchema),
			qp.kind != 'm' && p["additionalProperties"] != nil,
			qp.kind == 'a' && !equalJSON(p["items"], stringSchema),
			qp.kind != 'a' && p["items"] != nil:
			return nil
		}
		if e, ok := p["enum"]; ok {
			if qp.kind != 's' {
				return nil
			}
			for _, v := range asList(e) {
				s, ok := v.(string)
				if !ok {
					return nil
				}
				qp.enum = append(qp.enum, s)
			}
			if qp.enum == nil {
				return nil
			}
		}
		q.props[name] = qp
	}
	return q
}

// valid reports whether args, a JSON object, surely satisfies the schema.
func (q *quickArgs) valid(args []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return false
	}
	for _, r := range q.required {
		if _, ok := obj[r]; !ok {
			return false
		}
	}
	for k, v := range obj {
		p, ok := q.props[k]
		if !ok || !p.valid(v) {
			return false
		}
	}
	return true
}

// valid reports whether v, one well-formed JSON value, surely matches p.
func (p quickProp) valid(v json.RawMessage) bool {
	if len(v) == 0 {
		return false
	}
	switch p.kind {
	case 's':
		if v[0] != '"' {
			return false
		}
		if p.enum == nil {
			return true
		}
		var s string
		return json.Unmarshal(v, &s) == nil && slices.Contains(p.enum, s)
	case 'i':
		// Digits only: a fraction or an exponent is left to the schema.
		for i, c := range v {
			if (c < '0' || c > '9') && !(i == 0 && c == '-' && len(v) > 1) {
				return false
			}
		}
		return true
	case 'b':
		return string(v) == "true" || string(v) == "false"
	case 'm':
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || m == nil {
			return false
		}
		for _, e := range m {
			if len(e) == 0 || e[0] != '"' {
				return false
			}
		}
		return true
	case 'a':
		var a []json.RawMessage
		if json.Unmarshal(v, &a) != nil || a == nil {
			return false
		}
		for _, e := range a {
			if len(e) == 0 || e[0] != '"' {
				return false
			}
		}
		return true
	}
	return false
}

// only reports whether m has no keys but those named.
func only(m map[string]any, keys ...string) bool {
	for k := range m {
		if !slices.Contains(keys, k) {
			return false
		}
	}
	return true
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
