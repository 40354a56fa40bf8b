package tree

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// Name is a file name or relative path that survives JSON even when it is not valid UTF-8
// (a JSON string would replace the invalid bytes): valid names are JSON strings, others an
// object {"b64": "..."}.
type Name string

type nameB64 struct {
	B64 string `json:"b64"`
}

// MarshalJSON implements json.Marshaler.
func (n Name) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(n)) {
		return json.Marshal(string(n))
	}
	return json.Marshal(nameB64{B64: base64.StdEncoding.EncodeToString([]byte(n))})
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Name) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var o nameB64
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(o.B64)
		if err != nil {
			return err
		}
		*n = Name(raw)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*n = Name(s)
	return nil
}
