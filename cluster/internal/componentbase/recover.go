package componentbase

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
)

// LogPanic logs a panic recovered while serving a request, with the stack,
// at error level: a component that survives a bug in one request must
// still say so.
func LogPanic(logger *slog.Logger, what string, p any) {
	Logger(logger).Error("panic serving a request; the request failed, the component goes on",
		"request", what, "panic", p, "stack", string(debug.Stack()))
}

// Recover serves h, and turns a panic in it into a logged error and, if
// nothing was written yet, a 500. http.ErrAbortHandler, the way a handler
// cuts a response on purpose, goes on to net/http unlogged.
func Recover(logger *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &wroteRecorder{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			LogPanic(logger, r.Method+" "+r.URL.Path, p)
			if !rw.wrote {
				http.Error(w, "internal error: the server panicked serving this request (see its log)", http.StatusInternalServerError)
				return
			}
			// Half a response cannot be mended: cut it, as net/http
			// would, without its own log line.
			panic(http.ErrAbortHandler)
		}()
		h.ServeHTTP(rw, r)
	})
}

// wroteRecorder notes whether a response has begun. It keeps the
// interfaces streaming handlers need (Flusher, Hijacker) through
// http.ResponseController's Unwrap.
type wroteRecorder struct {
	http.ResponseWriter
	wrote bool
}

func (w *wroteRecorder) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *wroteRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Flush keeps event streams flowing through the recorder.
func (w *wroteRecorder) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection over for upgrades (exec, port-forward,
// proxied WebSockets), which assert http.Hijacker on the writer they get.
func (w *wroteRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.wrote = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap gives http.ResponseController the writer underneath (Hijack for
// upgrades, deadlines).
func (w *wroteRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
