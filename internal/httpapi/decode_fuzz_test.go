package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// decodeTargets are the request bodies of the JSON API, by index.
var decodeTargets = []func() any{
	func() any { return new(api.SendRequest) },
	func() any { return new(api.CheckRequest) },
	func() any { return new(api.WaitRequest) },
	func() any { return new(api.BroadcastRequest) },
	func() any { return new(api.JoinRequest) },
	func() any { return new(api.StatusRequest) },
	func() any { return new(api.GroupRequest) },
	func() any { return new(api.MemberRequest) },
	func() any { return new(api.CallToolRequest) },
	func() any { return new(api.CreateManagedAgentRequest) },
	func() any { return new(api.PromptRequest) },
	func() any { return new(api.ModeRequest) },
	func() any { return new(api.PermissionDecision) },
}

// FuzzDecode: the JSON API's body decoder never panics; it refuses bad input
// with an Invalid or TooLarge error; what it accepts encodes back to JSON that
// decodes to the same value.
func FuzzDecode(f *testing.F) {
	for i, s := range []string{
		`{"to":"bob","content":"hi","priority":"high","metadata":{"k":"v"},"payload":{"a":[1,2]}}`,
		`{"limit":10}`,
		`{"timeout":5,"priority_filter":"critical"}`,
		`{"content":"all","filter":{"status":"active","exclude":["x"]}}`,
		`{"name":"a","role":"r","module":"m"}`,
		`{"status":"work"}`,
		`{"name":"g","description":"d"}`,
		`{"member_type":"agent","member_id":"a"}`,
		`{"unknown":1}`,
		`[[[[[[[[[[`,
		`{"to":"\ud800"}`,
		`null`,
		`{} {}`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		mk := decodeTargets[int(which)%len(decodeTargets)]
		v := mk()
		r := httptest.NewRequest("POST", "/api/v1/x", bytes.NewReader(body))
		err := Decode(httptest.NewRecorder(), r, v)
		if err != nil {
			if k := hub.KindOf(err); k != hub.Invalid && k != hub.TooLarge {
				t.Fatalf("decode %T of %q: error kind %v, want invalid or too large: %v", v, body, k, err)
			}
			return
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("decoded %T %+v does not encode: %v", v, v, err)
		}
		w := mk()
		if err := Decode(httptest.NewRecorder(), httptest.NewRequest("POST", "/api/v1/x", bytes.NewReader(enc)), w); err != nil {
			t.Fatalf("re-decode %T of %s: %v", v, enc, err)
		}
		enc2, _ := json.Marshal(w)
		if !bytes.Equal(enc, enc2) && !reflect.DeepEqual(v, w) {
			t.Fatalf("round trip of %T: %s became %s", v, enc, enc2)
		}
	})
}
