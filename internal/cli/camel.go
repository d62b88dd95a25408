package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode"
)

// encodeCamel writes v as one line of JSON with every object key in camelCase, so a struct
// whose fields carry no json tags (delivery.Stats inside space.Status) reads like the tagged
// ones around it. Numbers keep their exact text.
func encodeCamel(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(camelKeys(tree))
}

// camelKeys rewrites the object keys of a decoded JSON value, recursively.
func camelKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[camelCase(k)] = camelKeys(x)
		}
		return out
	case []any:
		for i := range t {
			t[i] = camelKeys(t[i])
		}
	}
	return v
}

// camelCase lowers a key's leading capitals: FannedOutDurable becomes fannedOutDurable, ID id
// and DLVLag dlvLag; a key already in camelCase is unchanged.
func camelCase(k string) string {
	r := []rune(k)
	for i := range r {
		if !unicode.IsUpper(r[i]) {
			break
		}
		if i > 0 && i+1 < len(r) && unicode.IsLower(r[i+1]) {
			break
		}
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}
