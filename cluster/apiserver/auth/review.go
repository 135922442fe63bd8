package auth

import (
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// Review answers a SelfSubjectAccessReview (kubectl auth can-i <verb>
// <resource>) for u. Denied stays false when the request is not allowed:
// like RBAC, klab's policy never denies, it only fails to allow, and
// upstream reports that as allowed=false, denied=false.
//
// A spec must carry exactly one of resourceAttributes and
// nonResourceAttributes; the API server rejects other specs as invalid
// before asking. Review answers them with allowed=false and an
// evaluationError rather than guessing.
func (a *Authorizer) Review(u User, spec authorizationv1.SelfSubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
	var attrs Attributes
	switch ra, nra := spec.ResourceAttributes, spec.NonResourceAttributes; {
	case ra != nil && nra == nil:
		attrs = Attributes{
			User:            u,
			Verb:            ra.Verb,
			APIGroup:        ra.Group,
			APIVersion:      ra.Version,
			Resource:        ra.Resource,
			Subresource:     ra.Subresource,
			Namespace:       ra.Namespace,
			Name:            ra.Name,
			ResourceRequest: true,
		}
	case nra != nil && ra == nil:
		attrs = Attributes{User: u, Verb: nra.Verb, Path: nra.Path}
	default:
		return authorizationv1.SubjectAccessReviewStatus{
			EvaluationError: "exactly one of nonResourceAttributes or resourceAttributes must be specified",
		}
	}
	decision, reason := a.Authorize(attrs)
	return authorizationv1.SubjectAccessReviewStatus{Allowed: decision == DecisionAllow, Reason: reason}
}

// Rules answers a SelfSubjectRulesReview (kubectl auth can-i --list) for u
// in namespace: the rules of every role bound to u there (cluster role
// bindings, then the namespace's role bindings), split into resource and
// non-resource rules as upstream splits them.
func (a *Authorizer) Rules(u User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	status := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{},
		NonResourceRules: []authorizationv1.NonResourceRule{},
	}
	for _, r := range a.RulesFor(u, namespace) {
		if len(r.Resources) > 0 {
			status.ResourceRules = append(status.ResourceRules, authorizationv1.ResourceRule{
				Verbs:         slices.Clone(r.Verbs),
				APIGroups:     slices.Clone(r.APIGroups),
				Resources:     slices.Clone(r.Resources),
				ResourceNames: slices.Clone(r.ResourceNames),
			})
		}
		if len(r.NonResourceURLs) > 0 {
			status.NonResourceRules = append(status.NonResourceRules, authorizationv1.NonResourceRule{
				Verbs:           slices.Clone(r.Verbs),
				NonResourceURLs: slices.Clone(r.NonResourceURLs),
			})
		}
	}
	return status
}
