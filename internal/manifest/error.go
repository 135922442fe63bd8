package manifest

import "github.com/klab-dev/klab/assets/i18n"

// Error is a problem in a manifest file at a line (1-based, in the file).
type Error struct {
	// File is the path as given to Check.
	File string
	// Line is the 1-based line in the file.
	Line int
	// Document is the 1-based number of the YAML document (or JSON object)
	// the problem is in.
	Document int
	// Msg says what is wrong, in the words of the parser or of kubectl.
	Msg string
}

// Error renders the problem in the current language, such as
// "web.yaml:14: (document 2) mapping values are not allowed in this context".
func (e *Error) Error() string { return e.In(i18n.Current()) }

// In renders the problem in language l.
func (e *Error) In(l i18n.Lang) string {
	return l.T("manifest.err.at", e.File, e.Line, e.Document, e.Msg)
}
