package auth

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
)

// ServiceAccountUsernamePrefix starts a service account's user name:
// system:serviceaccount:<namespace>:<name>.
const ServiceAccountUsernamePrefix = "system:serviceaccount:"

// ServiceAccountUsername returns the user name of a service account.
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountUsernamePrefix + namespace + ":" + name
}

// Authorizer is the RBAC authorizer: it decides a request from the Roles,
// ClusterRoles, RoleBindings and ClusterRoleBindings it is given, as
// upstream's RBACAuthorizer does over its informers' listers. A request is
// allowed when some rule of some role bound to the user, or to one of the
// user's groups, matches it; nothing ever denies explicitly.
//
// The API server feeds it from its watch cache ([Authorizer.Set],
// [Authorizer.Delete], [Authorizer.Replace]), so no request waits on etcd to
// be authorized. Readers see an immutable snapshot (an index from subject to
// bindings) that each change replaces, so authorizing takes no lock.
type Authorizer struct {
	mu sync.Mutex // guards the maps below and serialises rebuilds
	// objects by kind ("Role", ...) then by namespace/name.
	objects map[string]map[string]any
	// revisions holds, by kind then key, the resourceVersion of the
	// latest change seen, deletions included: the server that wrote an
	// object applies it at once, and its watch, possibly behind, must
	// not then bring back an older state.
	revisions map[string]map[string]int64

	snap atomic.Pointer[snapshot]

	// node, when set, decides first (kube-apiserver's
	// --authorization-mode=Node,RBAC).
	node atomic.Pointer[NodeAuthorizer]
}

// UseNodeAuthorizer puts n before RBAC, as kube-apiserver's
// --authorization-mode=Node,RBAC does: a request n allows is allowed; any
// other goes to RBAC, and when RBAC does not allow it either, the reasons
// of both are given, n's first, as upstream's union authorizer joins them.
func (a *Authorizer) UseNodeAuthorizer(n *NodeAuthorizer) { a.node.Store(n) }

// NewAuthorizer returns an authorizer with no policy: it allows nothing
// until it is given roles and bindings.
func NewAuthorizer() *Authorizer {
	a := &Authorizer{objects: map[string]map[string]any{}, revisions: map[string]map[string]int64{}}
	a.snap.Store(&snapshot{})
	return a
}

// NewAuthorizerFor returns an authorizer deciding by objs (Roles,
// ClusterRoles, RoleBindings, ClusterRoleBindings, as pointers).
func NewAuthorizerFor(objs ...any) *Authorizer {
	a := NewAuthorizer()
	a.Set(objs...)
	return a
}

// Set adds or replaces objects of the policy. An object older than what
// was last seen of it (by resourceVersion) is ignored.
func (a *Authorizer) Set(objs ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, obj := range objs {
		if kind, key, ok := policyKey(obj); ok && a.newer(kind, key, obj) {
			if a.objects[kind] == nil {
				a.objects[kind] = map[string]any{}
			}
			a.objects[kind][key] = obj
		}
	}
	a.rebuild()
}

// Delete removes objects from the policy; as for Set, a deletion older
// than the last change seen is ignored.
func (a *Authorizer) Delete(objs ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, obj := range objs {
		if kind, key, ok := policyKey(obj); ok && a.newer(kind, key, obj) {
			delete(a.objects[kind], key)
		}
	}
	a.rebuild()
}

// newer records obj's resourceVersion for kind/key and reports whether it
// is not older than the one recorded. Objects without one (tests, the
// defaults) always apply.
func (a *Authorizer) newer(kind, key string, obj any) bool {
	m, ok := obj.(interface{ GetResourceVersion() string })
	if !ok {
		return true
	}
	rev, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return true
	}
	if a.revisions[kind] == nil {
		a.revisions[kind] = map[string]int64{}
	}
	if rev < a.revisions[kind][key] {
		return false
	}
	a.revisions[kind][key] = rev
	return true
}

// Replace sets every object of one kind ("Role", "ClusterRole",
// "RoleBinding", "ClusterRoleBinding") at once, as a relist does.
func (a *Authorizer) Replace(kind string, objs []any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.objects[kind] = map[string]any{}
	a.revisions[kind] = map[string]int64{}
	for _, obj := range objs {
		if k, key, ok := policyKey(obj); ok && k == kind && a.newer(kind, key, obj) {
			a.objects[kind][key] = obj
		}
	}
	a.rebuild()
}

func policyKey(obj any) (kind, key string, ok bool) {
	switch o := obj.(type) {
	case *rbacv1.Role:
		return "Role", o.Namespace + "/" + o.Name, true
	case *rbacv1.ClusterRole:
		return "ClusterRole", o.Name, true
	case *rbacv1.RoleBinding:
		return "RoleBinding", o.Namespace + "/" + o.Name, true
	case *rbacv1.ClusterRoleBinding:
		return "ClusterRoleBinding", o.Name, true
	}
	return "", "", false
}

// snapshot is the policy as readers see it: roles by name and, for each
// subject, the bindings that name it.
type snapshot struct {
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]*rbacv1.Role // namespace/name
	// clusterGrants and roleGrants (by namespace) index bindings by
	// subject key (see userKey, groupKey), in binding name order.
	clusterGrants map[string][]grant
	roleGrants    map[string]map[string][]grant
}

// grant is one subject of one binding.
type grant struct {
	kind      string // "ClusterRoleBinding" or "RoleBinding"
	name      string
	namespace string // of a RoleBinding
	roleRef   rbacv1.RoleRef
	subject   rbacv1.Subject
}

func userKey(name string) string  { return "u:" + name }
func groupKey(name string) string { return "g:" + name }

// subjectKey returns the index key of a subject of a binding in namespace
// ("" for a ClusterRoleBinding). A service account is indexed under its
// user name; one without a namespace, in a ClusterRoleBinding, names
// nobody (upstream's appliesToUser).
func subjectKey(s rbacv1.Subject, namespace string) (string, bool) {
	switch s.Kind {
	case rbacv1.UserKind:
		return userKey(s.Name), true
	case rbacv1.GroupKind:
		return groupKey(s.Name), true
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		if ns == "" {
			return "", false
		}
		return userKey(ServiceAccountUsername(ns, s.Name)), true
	}
	return "", false
}

// rebuild makes a new snapshot from the objects; a.mu is held.
func (a *Authorizer) rebuild() {
	s := &snapshot{
		clusterRoles:  map[string]*rbacv1.ClusterRole{},
		roles:         map[string]*rbacv1.Role{},
		clusterGrants: map[string][]grant{},
		roleGrants:    map[string]map[string][]grant{},
	}
	for key, obj := range a.objects["ClusterRole"] {
		s.clusterRoles[key] = obj.(*rbacv1.ClusterRole)
	}
	for key, obj := range a.objects["Role"] {
		s.roles[key] = obj.(*rbacv1.Role)
	}
	for _, key := range sortedKeys(a.objects["ClusterRoleBinding"]) {
		b := a.objects["ClusterRoleBinding"][key].(*rbacv1.ClusterRoleBinding)
		for _, subj := range b.Subjects {
			if k, ok := subjectKey(subj, ""); ok && !hasGrant(s.clusterGrants[k], b.Name) {
				s.clusterGrants[k] = append(s.clusterGrants[k], grant{kind: "ClusterRoleBinding", name: b.Name, roleRef: b.RoleRef, subject: subj})
			}
		}
	}
	for _, key := range sortedKeys(a.objects["RoleBinding"]) {
		b := a.objects["RoleBinding"][key].(*rbacv1.RoleBinding)
		byKey := s.roleGrants[b.Namespace]
		if byKey == nil {
			byKey = map[string][]grant{}
			s.roleGrants[b.Namespace] = byKey
		}
		for _, subj := range b.Subjects {
			if k, ok := subjectKey(subj, b.Namespace); ok && !hasGrant(byKey[k], b.Name) {
				byKey[k] = append(byKey[k], grant{kind: "RoleBinding", name: b.Name, namespace: b.Namespace, roleRef: b.RoleRef, subject: subj})
			}
		}
	}
	a.snap.Store(s)
}

// hasGrant reports whether grants already hold the binding: a binding that
// names the same subject twice is visited once.
func hasGrant(grants []grant, binding string) bool {
	return len(grants) > 0 && grants[len(grants)-1].name == binding
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// rules returns the rules of the role a grant refers to, or why there are
// none (a binding may name a role that does not exist yet).
func (s *snapshot) rules(g *grant) ([]rbacv1.PolicyRule, error) {
	switch g.roleRef.Kind {
	case "ClusterRole":
		if r, ok := s.clusterRoles[g.roleRef.Name]; ok {
			return r.Rules, nil
		}
		return nil, fmt.Errorf("clusterrole.rbac.authorization.k8s.io %q not found", g.roleRef.Name)
	case "Role":
		if r, ok := s.roles[g.namespace+"/"+g.roleRef.Name]; ok {
			return r.Rules, nil
		}
		return nil, fmt.Errorf("role.rbac.authorization.k8s.io %q not found", g.roleRef.Name)
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", g.roleRef.Kind)
}

// describe names a grant as upstream's rule resolver does in its reasons:
//
//	ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"
//	RoleBinding "read-pods/dev" of Role "pod-reader" to User "jane"
func (g *grant) describe() string {
	name := g.name
	if g.kind == "RoleBinding" {
		name += "/" + g.namespace
	}
	subject := fmt.Sprintf("%s %q", g.subject.Kind, g.subject.Name)
	if g.subject.Kind == rbacv1.ServiceAccountKind {
		ns := g.subject.Namespace
		if ns == "" {
			ns = g.namespace
		}
		subject = fmt.Sprintf("%s %q", g.subject.Kind, g.subject.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q of %s %q to %s", g.kind, name, g.roleRef.Kind, g.roleRef.Name, subject)
}

// visit calls fn with each rule that applies to u in namespace, cluster
// role bindings first, then the role bindings of namespace, as upstream's
// VisitRulesFor does; fn returns false to stop. Roles that cannot be found
// are passed as errors.
func (s *snapshot) visit(u User, namespace string, fn func(g *grant, rule *rbacv1.PolicyRule, err error) bool) {
	walk := func(grants map[string][]grant) bool {
		if len(grants) == 0 {
			return true
		}
		keys := make([]string, 0, 1+len(u.Groups))
		keys = append(keys, userKey(u.Name))
		for _, group := range u.Groups {
			keys = append(keys, groupKey(group))
		}
		seen := map[string]bool{}
		for _, k := range keys {
			for i := range grants[k] {
				g := &grants[k][i]
				if seen[g.name] {
					continue // a binding naming the user and a group
				}
				seen[g.name] = true
				rules, err := s.rules(g)
				if err != nil {
					if !fn(g, nil, err) {
						return false
					}
					continue
				}
				for j := range rules {
					if !fn(g, &rules[j], nil) {
						return false
					}
				}
			}
		}
		return true
	}
	if !walk(s.clusterGrants) || namespace == "" {
		return
	}
	walk(s.roleGrants[namespace])
}

// Authorize decides attrs: the Node authorizer first, when there is one
// ([Authorizer.UseNodeAuthorizer]), then RBAC. When it allows, the reason
// names what did, in the words of the authorizer that did:
//
//	Node: allowed by pod "default/web" bound to node "a"
//	RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"
//
// When it denies, the reason is the Node authorizer's (upstream's "no
// relationship found between node 'a' and this object", ...) and RBAC's
// (empty unless a binding named a role that does not exist: "RBAC: ...
// not found"), joined by a newline; the 403 message is [ForbiddenMessage]
// followed by it.
func (a *Authorizer) Authorize(attrs Attributes) (Decision, string) {
	var reasons []string
	if n := a.node.Load(); n != nil {
		allowed, reason := n.Authorize(attrs)
		if allowed {
			return DecisionAllow, reason
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	decision, reason := a.authorizeRBAC(attrs)
	if decision == DecisionAllow {
		return decision, reason
	}
	if reason != "" {
		reasons = append(reasons, reason)
	}
	return DecisionDeny, strings.Join(reasons, "\n")
}

// authorizeRBAC is the RBAC authorizer's decision alone.
func (a *Authorizer) authorizeRBAC(attrs Attributes) (Decision, string) {
	var (
		reason string
		errs   []string
	)
	a.snap.Load().visit(attrs.User, attrs.Namespace, func(g *grant, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			reason = "RBAC: allowed by " + g.describe()
			return false
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
		return true
	})
	if reason != "" {
		return DecisionAllow, reason
	}
	if len(errs) > 0 {
		return DecisionDeny, "RBAC: " + strings.Join(errs, ", ")
	}
	return DecisionDeny, ""
}

// RulesFor returns every rule that applies to u in namespace ("" for
// cluster bindings only), as upstream's rule resolver does for
// SelfSubjectRulesReview and for the escalation check.
func (a *Authorizer) RulesFor(u User, namespace string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	a.snap.Load().visit(u, namespace, func(_ *grant, rule *rbacv1.PolicyRule, _ error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		return true
	})
	return rules
}

// RoleRules returns the rules of the role ref refers to from a binding in
// namespace ("" for a ClusterRoleBinding).
func (a *Authorizer) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	return a.snap.Load().rules(&grant{kind: "RoleBinding", namespace: namespace, roleRef: ref})
}
