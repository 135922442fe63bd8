package manifest

import (
	"bytes"
	"strings"
)

// separator starts a line that ends one YAML document and starts the next.
const separator = "---"

// section is one document's text, as kubectl's YAMLReader cuts it, with
// where it lies in the file.
type section struct {
	// number is the document's 1-based number in the file.
	number int
	// text is the document without its separator line.
	text []byte
	// firstLine is the file line text starts at.
	firstLine int
	// contentLine is the first line holding more than blanks and comments,
	// or 0 if there is none.
	contentLine int
	// lastLine is the last line that is not blank, or firstLine if every
	// line is.
	lastLine int
}

// start is the line a problem with the document as a whole is reported at:
// where its content starts.
func (s *section) start() int {
	if s.contentLine != 0 {
		return s.contentLine
	}
	return s.firstLine
}

// split cuts data into documents the way k8s.io/apimachinery's YAMLReader
// does: a line that starts with "---" and continues with nothing but blanks
// or a comment separates two documents, and a line that starts with "---"
// and continues with anything else is kubectl's "invalid Yaml document
// separator" error. Documents are numbered as YAML counts them: every
// separator starts one, and the text before the first separator is one only
// if it holds more than blanks and comments.
func split(file string, data []byte) ([]section, *Error) {
	var sections []section
	cur := section{firstLine: 1}
	explicit := false // whether cur was started by a separator
	count := 0
	closeSection := func() {
		if explicit || cur.contentLine != 0 {
			count++
			cur.number = count
			if cur.lastLine == 0 {
				cur.lastLine = cur.firstLine
			}
			sections = append(sections, cur)
		}
	}

	line := 0
	for rest := data; len(rest) > 0; {
		line++
		var text []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			text, rest = rest[:i+1], rest[i+1:]
		} else {
			text, rest = rest, nil
		}
		if after, ok := bytes.CutPrefix(text, []byte(separator)); ok {
			trimmed := strings.TrimSpace(string(after))
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") {
				// The line was meant to start the next document.
				next := count + 1
				if explicit || cur.contentLine != 0 {
					next++
				}
				return nil, &Error{File: file, Line: line, Document: next,
					Msg: "invalid Yaml document separator: " + trimmed}
			}
			closeSection()
			cur, explicit = section{firstLine: line + 1}, true
			continue
		}
		cur.text = append(cur.text, text...)
		trimmed := strings.TrimSpace(string(text))
		if trimmed == "" {
			continue
		}
		cur.lastLine = line
		if cur.contentLine == 0 && !strings.HasPrefix(trimmed, "#") {
			cur.contentLine = line
		}
	}
	closeSection()
	return sections, nil
}
