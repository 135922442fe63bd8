package lab

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
)

// The control API is how other klab processes (klab chaos, klab down, the
// TUI attached to a running lab) act on the cluster that a foreground
// `klab up` process runs: small HTTP/JSON over a unix socket in the state
// dir, so that only the user who owns the state dir can reach it.
//
//	GET  /v1/status    ControlStatus
//	POST /v1/chaos     ChaosRequest → ChaosResult
//	POST /v1/restore   RestoreRequest → RestoreResult (see Cluster.Restore)
//	POST /v1/shutdown  ShutdownRequest → 202 Accepted
//
// Errors come back as {"error": "...", "key": "..."} with a 4xx/5xx status;
// the message is rendered in the language the client names in
// Accept-Language, and the key lets the client match sentinel errors.
const (
	pathStatus   = "/v1/status"
	pathChaos    = "/v1/chaos"
	pathShutdown = "/v1/shutdown"
)

// Cluster phases, as ControlStatus reports them.
const (
	PhaseStarting = "starting"
	PhaseReady    = "ready"
	PhaseStopping = "stopping"
)

// maxSocketPath is the room a unix socket path has in sockaddr_un on the
// strictest system klab supports (macOS: 104 bytes, Linux: 108).
const maxSocketPath = 103

// ControlStatus is what the control API reports about the running cluster.
type ControlStatus struct {
	Name       string                  `json:"name"`
	Phase      string                  `json:"phase"`
	PID        int                     `json:"pid"`
	Runtime    string                  `json:"runtime"`
	Components []runtime.ComponentInfo `json:"components"`
}

// ShutdownRequest asks the `klab up` process to stop the cluster.
type ShutdownRequest struct {
	// Reason is shown by the `klab up` process ("down" for klab down).
	Reason string `json:"reason,omitempty"`
}

type apiError struct {
	Error string `json:"error"`
	Key   string `json:"key,omitempty"`
}

// controlServer serves the control API of one cluster.
type controlServer struct {
	srv  *http.Server
	path string
	done chan struct{}
}

// listenControl takes the cluster's control socket. The socket doubles as
// the lock that keeps two `klab up` processes off one cluster: if another
// process answers on it, the cluster is running; if nobody does, the file is
// left over from a process that died, and is replaced.
func listenControl(dir, name string) (net.Listener, error) {
	path := filepath.Join(dir, ControlSocket)
	if len(path) > maxSocketPath {
		return nil, i18n.NewError("lab.err.socket-path", path, maxSocketPath)
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	switch {
	case err == nil:
		conn.Close()
		return nil, i18n.NewError("lab.err.already-running", name)
	case isNotListening(err):
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, i18n.Wrap(err, "lab.err.socket", path)
		}
	default:
		return nil, i18n.Wrap(err, "lab.err.socket", path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// Another `klab up` won the race between our check and bind.
			return nil, i18n.NewError("lab.err.already-running", name)
		}
		return nil, i18n.Wrap(err, "lab.err.socket", path)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, i18n.Wrap(err, "lab.err.socket", path)
	}
	return ln, nil
}

// isNotListening reports whether a dial error means that no process listens
// on the socket: the file is missing, or it is left over from a dead process.
func isNotListening(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT)
}

func serveControl(ln net.Listener, c *Cluster) *controlServer {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathStatus, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, c.controlStatus(r.Context()))
	})
	mux.HandleFunc("POST "+pathChaos, func(w http.ResponseWriter, r *http.Request) {
		var req ChaosRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, r, http.StatusBadRequest, i18n.Wrap(err, "lab.err.bad-request"))
			return
		}
		res, err := c.Chaos(r.Context(), req)
		if err != nil {
			writeError(w, r, statusFor(err), err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
	mux.HandleFunc("POST "+pathRestore, func(w http.ResponseWriter, r *http.Request) {
		var req RestoreRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, r, http.StatusBadRequest, i18n.Wrap(err, "lab.err.bad-request"))
			return
		}
		res, err := c.Restore(r.Context(), req.Snapshot)
		if err != nil {
			writeError(w, r, statusFor(err), err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
	mux.HandleFunc("POST "+pathShutdown, func(w http.ResponseWriter, r *http.Request) {
		var req ShutdownRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, r, http.StatusBadRequest, i18n.Wrap(err, "lab.err.bad-request"))
			return
		}
		c.requestShutdown(req.Reason)
		w.WriteHeader(http.StatusAccepted)
	})
	s := &controlServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		path: ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s
}

// close stops serving; closing the listener removes the socket file. Calls
// in flight get a moment to finish (a shutdown request's answer, mostly).
func (s *controlServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	<-s.done
	os.Remove(s.path)
}

// statusFor maps an error to an HTTP status: a request that names nothing
// real or asks for nonsense is the client's fault, a cluster not ready for it
// is a conflict, anything else is the server's.
func statusFor(err error) int {
	var e *i18n.Error
	switch {
	case errors.Is(err, ErrUnknownTarget), errors.As(err, &e) && strings.HasPrefix(e.Key, "chaos.err."):
		return http.StatusBadRequest
	case errors.Is(err, ErrStarting), errors.Is(err, ErrNoLeader):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, r *http.Request, code int, err error) {
	lang, ok := i18n.Parse(r.Header.Get("Accept-Language"))
	if !ok {
		lang = i18n.English
	}
	body := apiError{Error: i18n.Localize(err, lang)}
	var e *i18n.Error
	if errors.As(err, &e) {
		body.Key = e.Key
	}
	writeJSON(w, code, body)
}
