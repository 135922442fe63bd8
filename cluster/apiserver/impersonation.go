package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// impersonate turns a request carrying Impersonate-* headers (kubectl
// --as, --as-group, --as-uid) into a request of the user it names, as
// upstream's WithImpersonation filter does: the requesting user must be
// allowed the verb "impersonate" on each part of the identity (the user or
// service account, each group, the uid, each extra value), and the
// request then goes on as the impersonated user, never as the requester.
// It reports whether the request asked for impersonation.
func (s *Server) impersonate(r *http.Request, requester auth.User) (auth.User, bool, error) {
	name := r.Header.Get(authenticationv1.ImpersonateUserHeader)
	groups := r.Header.Values(authenticationv1.ImpersonateGroupHeader)
	uid := r.Header.Get(authenticationv1.ImpersonateUIDHeader)
	var extraKeys []string
	for h := range r.Header {
		if strings.HasPrefix(h, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			extraKeys = append(extraKeys, h)
		}
	}
	if name == "" && len(groups) == 0 && uid == "" && len(extraKeys) == 0 {
		return requester, false, nil
	}
	if name == "" {
		return auth.User{}, true, apierrors.NewBadRequest(fmt.Sprintf("requested %v without impersonating a user", impersonatedParts(groups, uid, extraKeys)))
	}

	// Each part the requester asks for is authorized on its own.
	var checks []auth.Attributes
	check := func(group, resource, subresource, namespace, name string) {
		checks = append(checks, auth.Attributes{
			User: requester, Verb: "impersonate", APIGroup: group, Resource: resource, Subresource: subresource,
			Namespace: namespace, Name: name, ResourceRequest: true,
		})
	}
	user := auth.User{Name: name, UID: uid}
	if ns, sa, ok := splitServiceAccount(name); ok {
		check("", "serviceaccounts", "", ns, sa)
		if len(groups) == 0 {
			// A service account's groups follow from its name.
			user.Groups = []string{auth.ServiceAccountsGroup, auth.ServiceAccountsGroup + ":" + ns}
		}
	} else {
		check("", "users", "", "", name)
	}
	for _, g := range groups {
		check("", "groups", "", "", g)
		user.Groups = append(user.Groups, g)
	}
	if uid != "" {
		check(authenticationv1.GroupName, "uids", "", "", uid)
	}
	for _, h := range extraKeys {
		key, err := url.PathUnescape(strings.ToLower(strings.TrimPrefix(h, authenticationv1.ImpersonateUserExtraHeaderPrefix)))
		if err != nil {
			return auth.User{}, true, apierrors.NewBadRequest(fmt.Sprintf("malformed extra key for impersonation request: %q", h))
		}
		for _, value := range r.Header.Values(h) {
			check(authenticationv1.GroupName, "userextras", key, "", value)
		}
	}
	for _, attrs := range checks {
		if d, _ := s.authz.Authorize(attrs); d != auth.DecisionAllow {
			err := apierrors.NewForbidden(schemaGroupResource(attrs.APIGroup, attrs.Resource), attrs.Name, fmt.Errorf("%s", auth.ForbiddenMessage(attrs)))
			return auth.User{}, true, err
		}
	}

	// Anyone but the anonymous user is authenticated.
	if name == auth.AnonymousUser {
		if !user.InGroup(auth.AllUnauthenticated) {
			user.Groups = append(user.Groups, auth.AllUnauthenticated)
		}
	} else if !user.InGroup(auth.AllAuthenticated) && !user.InGroup(auth.AllUnauthenticated) {
		user.Groups = append(user.Groups, auth.AllAuthenticated)
	}
	// The headers are spent: nothing further acts on them.
	r.Header.Del(authenticationv1.ImpersonateUserHeader)
	r.Header.Del(authenticationv1.ImpersonateGroupHeader)
	r.Header.Del(authenticationv1.ImpersonateUIDHeader)
	for _, h := range extraKeys {
		r.Header.Del(h)
	}
	return user, true, nil
}

// splitServiceAccount parses system:serviceaccount:<namespace>:<name>.
func splitServiceAccount(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, auth.ServiceAccountUsernamePrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	return namespace, name, ok && namespace != "" && name != "" && !strings.Contains(name, ":")
}

func impersonatedParts(groups []string, uid string, extraKeys []string) []string {
	var parts []string
	if len(groups) > 0 {
		parts = append(parts, "groups")
	}
	if uid != "" {
		parts = append(parts, "uid")
	}
	if len(extraKeys) > 0 {
		parts = append(parts, "extra")
	}
	return parts
}
