package lessons

import (
	"strconv"

	"github.com/klab-dev/klab/assets/i18n"
)

// LoadError is one problem in a lesson file: where it is and what is wrong.
// Load returns every LoadError it found, joined (errors.Join); range over
// them with LoadErrors.
type LoadError struct {
	// File is the file as Load names it.
	File string
	// Line and Column are 1-based; 0 when unknown (a file that cannot be
	// read has neither, a YAML syntax error has no column).
	Line, Column int
	// Path is the field the problem is in, such as "steps[2].hints[0]"
	// (indexes from 0); empty for the file as a whole.
	Path string
	// Msg says what is wrong.
	Msg i18n.Message
}

// Error renders the problem in the current language, such as
// "lessons/content/raft-election.yaml:14:5: steps[2].hints[0]: missing
// Korean (ko) translation".
func (e *LoadError) Error() string { return e.In(i18n.Current()) }

// In renders the problem in language l. The position comes first, in the
// file:line:column form that editors and terminals turn into links.
func (e *LoadError) In(l i18n.Lang) string {
	return e.Position() + ": " + e.Msg.In(l)
}

// Position returns "file:line:column: path" with the parts that are known.
func (e *LoadError) Position() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
		if e.Column > 0 {
			s += ":" + strconv.Itoa(e.Column)
		}
	}
	if e.Path != "" {
		s += ": " + e.Path
	}
	return s
}

// LoadErrors returns the LoadErrors inside err, as Load returns them
// joined; an error that holds none gives nil.
func LoadErrors(err error) []*LoadError {
	var out []*LoadError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *LoadError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		}
	}
	walk(err)
	return out
}
