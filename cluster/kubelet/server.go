package kubelet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/internal/componentbase"
	"github.com/klab-dev/klab/cluster/internal/eventstream"
)

// handler is the kubelet's HTTPS API: /healthz, /containerLogs and the
// klab debug endpoints, every one behind authentication and
// authorization, as the kubelet's port 10250 is.
func (k *Kubelet) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.serveContainerLogs)
	mux.HandleFunc("GET /stats/summary", k.serveSummary)
	k.streamingHandlers(mux)
	mux.HandleFunc("GET /debug/klab/status", k.serveStatus)
	mux.HandleFunc("GET /debug/klab/events", k.serveEvents)
	return k.withAuth(mux)
}

// withAuth authenticates a request by a client certificate the cluster CA
// signed or by a bearer token, then authorizes it with a
// SubjectAccessReview for nodes/<subresource> of this node, as upstream's
// kubelet in webhook mode: no or unknown credentials get 401, a denied
// request 403, with upstream's texts.
func (k *Kubelet) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := certificateUser(r)
		if !ok {
			token, hasToken := bearerToken(r.Header.Get("Authorization"))
			if !hasToken {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			user, err = k.authn.authenticate(r.Context(), token)
		}
		if err != nil {
			if !errors.Is(err, errUnauthenticated) {
				k.log.Warn("unable to authenticate the request", "err", err)
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := accessAttributes{user: user, verb: requestVerb(r.Method), subresource: subresource(r.URL.Path)}
		allowed, reason, err := k.authz.authorize(r.Context(), attrs)
		if err != nil {
			// Upstream answers 500 when the review cannot be made.
			k.log.Warn("authorization error", "user", user.Username, "verb", attrs.verb, "subresource", attrs.subresource, "err", err)
			http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)", user.Username, attrs.verb, "nodes", attrs.subresource), http.StatusInternalServerError)
			return
		}
		if !allowed {
			k.log.Info("forbidden", "user", user.Username, "verb", attrs.verb, "subresource", attrs.subresource, "reason", reason)
			msg := fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=[%s])", user.Username, attrs.verb, "nodes", attrs.subresource)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// subresource is the nodes subresource upstream's kubelet authorizes a
// path as.
func subresource(path string) string {
	switch {
	case path == "/healthz":
		return "healthz"
	case strings.HasPrefix(path, "/logs"):
		return "log"
	case path == "/stats" || strings.HasPrefix(path, "/stats/"):
		return "stats"
	case path == "/metrics" || strings.HasPrefix(path, "/metrics/"):
		return "metrics"
	case path == "/configz":
		return "configz"
	case path == "/spec" || strings.HasPrefix(path, "/spec/"):
		return "spec"
	default:
		return "proxy"
	}
}

// writeStatusError answers with a metav1.Status, which kubectl prints as
// "Error from server (BadRequest): ..." when the API server passes it on.
func writeStatusError(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: message, Reason: reason, Code: int32(code),
	})
}

// Status is the kubelet's /debug/klab/status.
type Status struct {
	Node       string            `json:"node"`
	Runtime    string            `json:"runtime"`
	Listen     string            `json:"listen"`
	Ready      bool              `json:"ready"`
	NodeUID    string            `json:"nodeUID,omitempty"`
	LastLease  time.Time         `json:"lastLeaseRenew,omitzero"`
	LastStatus time.Time         `json:"lastNodeStatus,omitzero"`
	Speed      float64           `json:"speed"`
	Pods       []WorkerStatus    `json:"pods"`
	StaticPods []StaticPodStatus `json:"staticPods,omitempty"`
}

// DebugStatus reports the kubelet's state, as /debug/klab/status does.
func (k *Kubelet) DebugStatus() Status {
	k.nodeMu.Lock()
	st := Status{
		Node: k.cfg.NodeName, Runtime: k.runtime.Name(), Listen: k.Addr(),
		LastLease: k.lastLeaseRenew, LastStatus: k.nodeStatusPosted, Speed: k.cfg.Speed.Factor(),
	}
	if k.node != nil {
		st.NodeUID = string(k.node.UID)
		for _, c := range k.node.Status.Conditions {
			if c.Type == v1.NodeReady {
				st.Ready = c.Status == v1.ConditionTrue
			}
		}
	}
	k.nodeMu.Unlock()
	st.Pods = k.workers.snapshot()
	st.StaticPods = k.mirrors.snapshot()
	return st
}

func (k *Kubelet) serveStatus(w http.ResponseWriter, r *http.Request) {
	componentbase.WriteJSON(w, http.StatusOK, k.DebugStatus())
}

// serveEvents streams lifecycle events: the recent ones first, then each
// as it happens, written at once.
func (k *Kubelet) serveEvents(w http.ResponseWriter, r *http.Request) {
	eventstream.Serve(w, r, k.stream, eventstream.Options[LifecycleEvent]{
		Status: func() any { return k.DebugStatus() }, Done: k.life.Quit(),
	})
}
