package apiserver

import (
	"errors"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// checkEscalation keeps a user from granting, through a role or a binding
// they write, more than they hold themselves, as upstream's RBAC storage
// does (pkg/registry/rbac/*/policybased):
//
//   - a Role or ClusterRole may be written by whoever holds all its rules,
//     or may "escalate" roles or clusterroles; an aggregation rule, which
//     can gather anything, needs every permission;
//   - a RoleBinding or ClusterRoleBinding may be written by whoever holds
//     all the rules of the role it refers to, or may "bind" that role.
//
// Members of system:masters skip the check. An update that only changes
// owner references or finalizers (the garbage collector's) is let
// through. old is nil on create.
func (s *Server) checkEscalation(req *request, obj, old runtime.Object) error {
	if req.user.InGroup(auth.SystemPrivilegedGroup) {
		return nil
	}
	switch obj.(type) {
	case *rbacv1.Role, *rbacv1.ClusterRole, *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
	default:
		return nil
	}
	if old != nil && onlyGCFieldsChanged(obj, old) {
		return nil
	}
	gr := req.res.GroupResource()
	m, _ := meta.Accessor(obj)
	name, namespace := m.GetName(), req.info.namespace
	forbidden := func(err error) error { return apierrors.NewForbidden(gr, name, err) }
	switch o := obj.(type) {
	case *rbacv1.Role, *rbacv1.ClusterRole:
		// The escalate verb is asked about the request itself: its
		// resource, and the name of the URL (none on a create).
		escalate := auth.Attributes{
			User: req.user, Verb: "escalate", APIGroup: req.info.gv.Group, APIVersion: req.info.gv.Version,
			Resource: req.info.resource, Namespace: namespace, Name: req.info.name, ResourceRequest: true,
		}
		if d, _ := s.authz.Authorize(escalate); d == auth.DecisionAllow {
			return nil
		}
		var rules []rbacv1.PolicyRule
		var aggregated bool
		if r, ok := o.(*rbacv1.Role); ok {
			rules = r.Rules
		} else {
			cr := o.(*rbacv1.ClusterRole)
			rules, aggregated = cr.Rules, cr.AggregationRule != nil
		}
		if err := s.authz.ConfirmNoEscalation(req.user, namespace, rules); err != nil {
			return forbidden(err)
		}
		if aggregated {
			if err := s.authz.ConfirmNoEscalation(req.user, namespace, auth.FullAuthority); err != nil {
				return forbidden(errors.New("must have cluster-admin privileges to use the aggregationRule"))
			}
		}
	case *rbacv1.RoleBinding:
		return s.checkBind(req, o.RoleRef, namespace, forbidden)
	case *rbacv1.ClusterRoleBinding:
		return s.checkBind(req, o.RoleRef, "", forbidden)
	}
	return nil
}

// checkBind allows a binding to ref by a user who may "bind" the role, or
// who holds all its rules.
func (s *Server) checkBind(req *request, ref rbacv1.RoleRef, namespace string, forbidden func(error) error) error {
	resource := "roles"
	if ref.Kind == "ClusterRole" {
		resource = "clusterroles"
	}
	bind := auth.Attributes{
		User: req.user, Verb: "bind", APIGroup: rbacv1.GroupName, APIVersion: "v1",
		Resource: resource, Namespace: namespace, Name: ref.Name, ResourceRequest: true,
	}
	if d, _ := s.authz.Authorize(bind); d == auth.DecisionAllow {
		return nil
	}
	rules, err := s.authz.RoleRules(ref, namespace)
	if err != nil {
		return forbidden(err)
	}
	if err := s.authz.ConfirmNoEscalation(req.user, namespace, rules); err != nil {
		return forbidden(err)
	}
	return nil
}

// onlyGCFieldsChanged reports whether obj differs from old in nothing but
// owner references, finalizers and managed fields (upstream's
// IsOnlyMutatingGCFields).
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	copied := obj.DeepCopyObject()
	cm, err := meta.Accessor(copied)
	if err != nil {
		return false
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetManagedFields(om.GetManagedFields())
	cm.SetResourceVersion(om.GetResourceVersion())
	return reflect.DeepEqual(copied, old)
}
