package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Check parses every YAML document in data and returns the first syntax
// error with the file's own line, or a document that is not an object with
// a string apiVersion and kind (at the line its content starts). Documents
// holding nothing, or only comments or null, are fine, as kubectl skips
// them. A JSON file (one whose first non-blank character is "{") is read
// as a stream of JSON objects. The error, when there is one, is an *Error.
func Check(file string, data []byte) error {
	var problem *Error
	if looksLikeJSON(data) {
		var syntax bool
		problem, syntax = checkJSON(file, data)
		if syntax {
			// kubectl tries YAML when JSON fails, and reports the JSON
			// error only if the text does not parse as YAML either.
			if yamlProblem, yamlSyntax := checkYAML(file, data); !yamlSyntax {
				problem = yamlProblem
			}
		}
	} else {
		problem, _ = checkYAML(file, data)
	}
	if problem == nil {
		return nil
	}
	return problem
}

// looksLikeJSON is apimachinery's IsJSONBuffer: the first non-blank
// character is "{".
func looksLikeJSON(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeftFunc(data, unicode.IsSpace), []byte("{"))
}

// checkYAML checks data as YAML documents. syntax tells a parse error from
// an object lacking its kind.
func checkYAML(file string, data []byte) (problem *Error, syntax bool) {
	sections, problem := split(file, data)
	if problem != nil {
		return problem, true
	}
	for i := range sections {
		s := &sections[i]
		var obj any
		if err := yaml.Unmarshal(s.text, &obj); err != nil {
			line, msg := s.locate(err)
			return &Error{File: file, Line: line, Document: s.number, Msg: msg}, true
		}
		if obj == nil {
			continue
		}
		if msg := objectProblem(obj); msg != "" {
			return &Error{File: file, Line: s.start(), Document: s.number, Msg: msg}, false
		}
	}
	return nil, false
}

// yamlLine matches the "yaml: line N: " that go.yaml.in/yaml/v2 puts before
// a syntax error, and the "line N: " of each of its unmarshal errors.
var yamlLine = regexp.MustCompile(`(?s)^(?:yaml: )?line (\d+): (.*)$`)

// locate turns a parser error about the section into a file line and the
// parser's message without its "yaml: line N:" prefix. The parser counts
// lines from the section's first; a line past the section's last (an
// unexpected end of the document) is reported at the last one. An error
// without a line is reported where the content starts.
func (s *section) locate(err error) (int, string) {
	msg := err.Error()
	var typeErr *yaml.TypeError
	if errors.As(err, &typeErr) && len(typeErr.Errors) > 0 {
		msg = typeErr.Errors[0]
	}
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return s.start(), strings.TrimPrefix(msg, "yaml: ")
	}
	n, convErr := strconv.Atoi(m[1])
	if convErr != nil || n < 1 {
		return s.start(), m[2]
	}
	return min(s.firstLine+n-1, s.lastLine), m[2]
}

// checkJSON reads data as a stream of JSON values. syntax tells a parse
// error from an object lacking its kind.
func checkJSON(file string, data []byte) (problem *Error, syntax bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	for number := 1; ; number++ {
		start := int(dec.InputOffset())
		var obj any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, false
			}
			at := len(data)
			var se *json.SyntaxError
			if errors.As(err, &se) {
				// Offset counts the bytes read, the bad one included.
				at = int(se.Offset) - 1
			}
			return &Error{File: file, Line: lineAt(data, at), Document: number, Msg: err.Error()}, true
		}
		if msg := objectProblem(obj); msg != "" {
			start += len(data[start:]) - len(bytes.TrimLeftFunc(data[start:], unicode.IsSpace))
			return &Error{File: file, Line: lineAt(data, start), Document: number, Msg: msg}, false
		}
	}
}

// lineAt returns the 1-based line of byte offset at in data, counting a
// position past the end as the last line.
func lineAt(data []byte, at int) int {
	at = max(0, min(at, len(data)))
	line := 1 + bytes.Count(data[:at], []byte("\n"))
	if at == len(data) && bytes.HasSuffix(data, []byte("\n")) {
		line--
	}
	return max(line, 1)
}

// objectProblem checks what kubectl's validation checks first, with its
// messages: obj is a mapping whose apiVersion and kind are set and are
// strings, and apiVersion is a group/version. Several problems are listed
// in brackets, as kubectl's aggregated errors are.
func objectProblem(obj any) string {
	var get func(key string) any
	switch m := obj.(type) {
	case map[any]any:
		get = func(key string) any { return m[key] }
	case map[string]any:
		get = func(key string) any { return m[key] }
	default:
		return "invalid object to validate"
	}
	var problems []string
	switch apiVersion := get("apiVersion").(type) {
	case nil:
		problems = append(problems, "apiVersion not set")
	case string:
		if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
			problems = append(problems, err.Error())
		}
	default:
		problems = append(problems, "apiVersion isn't string type")
	}
	switch get("kind").(type) {
	case nil:
		problems = append(problems, "kind not set")
	case string:
	default:
		problems = append(problems, "kind isn't string type")
	}
	if len(problems) == 1 {
		return problems[0]
	}
	if len(problems) > 1 {
		return "[" + strings.Join(problems, ", ") + "]"
	}
	return ""
}
