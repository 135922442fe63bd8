package auth

import "fmt"

// Attributes describe one request for authorization, as upstream's
// authorizer.AttributesRecord does.
type Attributes struct {
	User User
	// Verb is the API verb (get, list, watch, create, update, patch,
	// delete, deletecollection) for a resource request, and the lowercase
	// HTTP method (get, post, put, ...) for any other request.
	Verb string
	// APIGroup is "" for the core group.
	APIGroup    string
	APIVersion  string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Path is the URL path; authorization of a non-resource request looks
	// only at it and the verb.
	Path string
	// ResourceRequest is true for requests under /api/<version>/ and
	// /apis/<group>/<version>/ that name a resource, false for everything
	// else (discovery, /healthz, /version, ...).
	ResourceRequest bool
}

// Decision is the outcome of authorization.
type Decision int

const (
	// DecisionDeny means no rule allows the request. Upstream authorizers
	// can also say "no opinion" and leave it to the next one; klab has a
	// single authorizer, so no opinion is a denial.
	DecisionDeny Decision = iota
	// DecisionAllow means a rule allows the request.
	DecisionAllow
)

// String returns the decision as a word.
func (d Decision) String() string {
	if d == DecisionAllow {
		return "allow"
	}
	return "deny"
}

// ForbiddenMessage returns the text kube-apiserver puts in a 403 Forbidden
// response (k8s.io/apiserver responsewriters.forbiddenMessage), for
// example:
//
//	User "klab-viewer" cannot create resource "pods" in API group "" in the namespace "default"
//
// The API server wraps it in a Status whose message starts with
// `<resource> is forbidden: `, as apierrors.NewForbidden does.
func ForbiddenMessage(attrs Attributes) string {
	name := attrs.User.Name
	if !attrs.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, attrs.Verb, attrs.Path)
	}
	resource := attrs.Resource
	if attrs.Subresource != "" {
		resource += "/" + attrs.Subresource
	}
	if attrs.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, attrs.Verb, resource, attrs.APIGroup, attrs.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, attrs.Verb, resource, attrs.APIGroup)
}
