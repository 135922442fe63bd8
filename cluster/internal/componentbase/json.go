package componentbase

import (
	"encoding/json"
	"net/http"
)

// WriteJSON answers with code and v as indented JSON, which reads well in
// curl and decodes as well as compact JSON. A value that cannot be
// encoded is a 500 with the reason, never a half-written body.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
