package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// ServeHTTP runs a request through authentication, authorization and the
// handler for what it asks.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.waitRunning(r.Context())
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	info := parseRequestInfo(r)
	user, authenticated := s.authenticate(r)
	// authz is the authorization decision and its reason, for the request
	// stream; empty for requests that were never authorized (public
	// paths, 401s).
	var authz authzOutcome
	// req is the resource request once it is routed; a create names its
	// object only in the body, and the stream names it from there.
	var req *request
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			componentbase.LogPanic(s.cfg.Logger, r.Method+" "+r.URL.Path, p)
			writeError(rec, r, apierrors.NewInternalError(fmt.Errorf("panic serving %s %s: %v", r.Method, r.URL.Path, p)))
		}
		ev := newRequestEvent(info, user.Name, r.UserAgent(), rec.code, time.Since(start), rec.Header().Get(headerRevision))
		if authenticated {
			ev.Groups = user.Groups
		}
		ev.Decision, ev.Reason = authz.decision, authz.reason
		if ev.Name == "" && req != nil {
			ev.Name = req.bodyName
		}
		s.requests.Publish(ev)
	}()
	if !longRunning(info) {
		timeout, err := requestTimeout(r)
		if err != nil {
			writeError(rec, r, err)
			return
		}
		ctx, cancel := context.WithDeadline(r.Context(), start.Add(timeout))
		defer cancel()
		r = r.WithContext(ctx)
	}

	if isPublicPath(r.URL.Path) {
		s.serveNonResource(rec, r, info)
		return
	}
	if !authenticated {
		// No valid token: 401 before anything else is looked at.
		writeError(rec, r, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	if impersonated, asked, err := s.impersonate(r, user); asked {
		if err != nil {
			writeError(rec, r, err)
			return
		}
		user = impersonated
	}
	attrs := attributes(user, info)
	decision, reason := s.authz.Authorize(attrs)
	authz = newAuthzOutcome(decision, reason)
	if decision != auth.DecisionAllow {
		writeError(rec, r, forbiddenBecause(info, attrs, reason))
		return
	}
	if !info.resourceRequest {
		s.serveNonResource(rec, r, info)
		return
	}
	res, ok := s.reg.Lookup(info.gvr())
	if !ok {
		writeError(rec, r, notFoundResource())
		return
	}
	req = &request{Request: r, info: info, user: user, res: res}
	s.serveResource(rec, req)
}

// longRunning reports whether a request may outlive the request timeout,
// as upstream's BasicLongRunningRequestCheck decides: watches and the
// streaming subresources; and klab's own event streams.
func longRunning(info requestInfo) bool {
	if !info.resourceRequest {
		return strings.HasPrefix(info.path, "/debug/klab/events")
	}
	if info.verb == registry.VerbWatch {
		return true
	}
	switch info.subresource {
	case "attach", "exec", "proxy", "log", "portforward":
		return true
	}
	return false
}

// requestTimeout is how long a request that is not long-running may take:
// the client's ?timeout= when it asks for less than the server's limit
// (kube-apiserver's --request-timeout, 1m), else the limit.
func requestTimeout(r *http.Request) (time.Duration, error) {
	value := r.URL.Query().Get("timeout")
	if value == "" {
		return defaultRequestTimeout, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, apierrors.NewBadRequest("invalid timeout specified in the request URL - " + err.Error())
	}
	if d > 0 && d < defaultRequestTimeout {
		return d, nil
	}
	return defaultRequestTimeout, nil
}

// attributes are what authorization looks at in a request.
func attributes(user auth.User, info requestInfo) auth.Attributes {
	return auth.Attributes{
		User: user, Verb: info.verb, APIGroup: info.gv.Group, APIVersion: info.gv.Version,
		Resource: info.resource, Subresource: info.subresource, Namespace: info.namespace, Name: info.name,
		Path: info.path, ResourceRequest: info.resourceRequest,
	}
}

// authorizeVerb authorizes the request once more as verb, for handlers
// that need a second permission (a WebSocket exec needs create as well as
// get); it returns upstream's Forbidden when the user lacks it.
func (s *Server) authorizeVerb(req *request, verb string) error {
	info := req.info
	info.verb = verb
	attrs := attributes(req.user, info)
	if decision, _ := s.authz.Authorize(attrs); decision != auth.DecisionAllow {
		return forbidden(info, attrs)
	}
	return nil
}

// request is one resource request on its way through the handlers.
type request struct {
	*http.Request
	info requestInfo
	user auth.User
	res  *registry.Resource
	// applied is set for a server-side apply, whose merge has already
	// recorded the managed fields of the object to write.
	applied bool
	// fieldsSubresource, when set, is the subresource a write through the
	// parent resource is recorded under in managedFields (a scale writes
	// the parent's spec.replicas, and upstream records it as "scale").
	fieldsSubresource string
	// bodyName is the name the object in a create's body carries, which
	// the URL does not: upstream's audit fills objectRef.name from the
	// request object the same way, and the request stream shows it.
	bodyName string
}

// managedSubresource is the subresource the request's write is recorded
// under in managedFields.
func (r *request) managedSubresource() string {
	if r.fieldsSubresource != "" {
		return r.fieldsSubresource
	}
	return r.info.subresource
}

func forbidden(info requestInfo, attrs auth.Attributes) error {
	return forbiddenBecause(info, attrs, "")
}

// forbiddenBecause is forbidden with the authorizers' reason after the
// message, as upstream's responsewriters.Forbidden writes it:
//
//	secrets "x" is forbidden: User "system:node:b" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'b' and this object
func forbiddenBecause(info requestInfo, attrs auth.Attributes, reason string) error {
	msg := auth.ForbiddenMessage(attrs)
	if reason != "" {
		msg += ": " + reason
	}
	if !info.resourceRequest {
		err := apierrors.NewForbidden(schemaGroupResource("", ""), "", fmt.Errorf("%s", msg))
		err.ErrStatus.Message = "forbidden: " + msg
		return err
	}
	// The resource is named without its subresource, as upstream does;
	// the message names both.
	return apierrors.NewForbidden(schemaGroupResource(info.gv.Group, info.resource), info.name, fmt.Errorf("%s", msg))
}

func notFoundResource() error {
	err := apierrors.NewNotFound(schemaGroupResource("", ""), "")
	err.ErrStatus.Message = "the server could not find the requested resource"
	err.ErrStatus.Details = &metav1StatusDetails{}
	return err
}

// serveResource dispatches a resource request by verb and subresource.
func (s *Server) serveResource(w http.ResponseWriter, req *request) {
	if req.res.Group == registry.MetricsGroup {
		s.serveMetrics(w, req)
		return
	}
	if req.info.subresource != "" {
		s.serveSubresource(w, req)
		return
	}
	if !req.res.HasVerb(req.info.verb) {
		writeError(w, req.Request, apierrors.NewMethodNotSupported(req.res.GroupResource(), req.info.verb))
		return
	}
	if req.res.Namespaced && req.info.namespace == "" && req.info.name != "" {
		writeError(w, req.Request, notFoundResource())
		return
	}
	switch req.info.verb {
	case registry.VerbGet:
		s.get(w, req)
	case registry.VerbList:
		s.list(w, req)
	case registry.VerbWatch:
		s.watch(w, req)
	case registry.VerbCreate:
		s.create(w, req)
	case registry.VerbUpdate:
		s.update(w, req)
	case registry.VerbPatch:
		s.patch(w, req)
	case registry.VerbDelete:
		s.delete(w, req)
	case registry.VerbDeleteCollection:
		s.deleteCollection(w, req)
	default:
		writeError(w, req.Request, apierrors.NewMethodNotSupported(req.res.GroupResource(), req.Method))
	}
}

// readBody reads a request body up to upstream's size limit.
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err))
	}
	if len(data) > maxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxRequestBodyBytes))
	}
	return data, nil
}

func isPublicPath(path string) bool {
	switch path {
	case "/healthz", "/livez", "/readyz", "/version", "/version/":
		return true
	}
	return strings.HasPrefix(path, "/healthz/") || strings.HasPrefix(path, "/livez/") || strings.HasPrefix(path, "/readyz/")
}

// statusRecorder remembers the response code for the request log and
// passes flushes and hijacks through (watches stream).
type statusRecorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.code, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("connection cannot be hijacked")
	}
	return h.Hijack()
}

// authenticate identifies the request's user as kube-apiserver's union of
// authenticators does, first success wins: a verified client certificate,
// then a bearer token from the token file, then a ServiceAccount token.
func (s *Server) authenticate(r *http.Request) (auth.User, bool) {
	if r.TLS != nil && s.cfg.ClientCA != nil {
		if u, ok := auth.X509User(r.TLS.VerifiedChains); ok {
			return u, true
		}
	}
	token, ok := auth.BearerToken(r)
	if !ok {
		return auth.User{}, false
	}
	if s.cfg.Authenticator != nil {
		if u, ok := s.cfg.Authenticator.AuthenticateToken(token); ok {
			return u, true
		}
	}
	if s.saAuthn != nil {
		u, _, err := s.saAuthn.AuthenticateToken(r.Context(), token)
		return u, err == nil
	}
	return auth.User{}, false
}
