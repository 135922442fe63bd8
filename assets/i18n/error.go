package i18n

// Error is an error a user reads: a message key with its arguments, and
// optionally the lower-level error that caused it. It renders in the language
// current when Error is called, so an error kept by the TUI follows a language
// switch.
//
// Two Errors with the same key match under errors.Is whatever their
// arguments, so a package can declare a sentinel without arguments
// (var ErrNotRunning = &i18n.Error{Key: "lab.err.not-running"}) and return it
// with arguments filled in.
type Error struct {
	Key  string
	Args []any
	// Err is the cause; its text (technical, usually English, as upstream
	// wrote it) follows the message after a colon.
	Err error
}

// NewError returns an Error for key with args and no cause.
func NewError(key string, args ...any) *Error { return &Error{Key: key, Args: args} }

// Wrap returns an Error for key with args whose cause is err.
func Wrap(err error, key string, args ...any) *Error {
	return &Error{Key: key, Args: args, Err: err}
}

// Error renders the error in the current language.
func (e *Error) Error() string { return e.In(Current()) }

// In renders the error in language l, causes included.
func (e *Error) In(l Lang) string {
	msg := l.T(e.Key, e.Args...)
	if e.Err != nil {
		msg += ": " + Localize(e.Err, l)
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an Error with the same key.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Key == e.Key
}

// Localize renders err in language l: an *Error (at the top of the chain) is
// rendered in l, anything else keeps its own text.
func Localize(err error, l Lang) string {
	if err == nil {
		return ""
	}
	if e, ok := err.(*Error); ok {
		return e.In(l)
	}
	return err.Error()
}
