package apiserver

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
)

// The RBAC resources, which the authorizer follows.
var (
	rolesGVR               = schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "roles"}
	clusterRolesGVR        = schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "clusterroles"}
	roleBindingsGVR        = schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "rolebindings"}
	clusterRoleBindingsGVR = schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "clusterrolebindings"}
)

// policySyncTimeout bounds how long a starting server waits for its first
// copy of the policy: it cannot authorize anything without one.
const policySyncTimeout = 30 * time.Second

// watchPolicy keeps the authorizer's copy of the roles and bindings
// current, as upstream's RBAC authorizer reads them through informers: a
// watch of each resource from the watch cache, starting with every object
// (the watch-list protocol), and restarted from a fresh list if it ends.
// It returns once every resource has been listed, so the server serves no
// request with a partial policy.
func (s *Server) watchPolicy(ctx context.Context) error {
	watchCtx, cancel := context.WithCancel(context.Background())
	s.life.Go(func() {
		<-s.life.Quit()
		cancel()
	})
	kinds := []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{{rolesGVR, "Role"}, {clusterRolesGVR, "ClusterRole"}, {roleBindingsGVR, "RoleBinding"}, {clusterRoleBindingsGVR, "ClusterRoleBinding"}}
	synced := make(chan struct{}, len(kinds))
	for _, k := range kinds {
		res, _ := s.reg.Lookup(k.gvr)
		var once bool
		sink := watchSink{
			replace: func(objs []runtime.Object) {
				listed := make([]any, len(objs))
				for i, o := range objs {
					listed[i] = o
				}
				s.authz.Replace(k.kind, listed)
			},
			set:    func(obj runtime.Object) { s.authz.Set(obj) },
			delete: func(obj runtime.Object) { s.authz.Delete(obj) },
		}
		s.life.Go(func() {
			s.followResource(watchCtx, res, sink, func() {
				if !once {
					once = true
					synced <- struct{}{}
				}
			})
		})
	}
	ctx, stop := context.WithTimeout(ctx, policySyncTimeout)
	defer stop()
	for range kinds {
		select {
		case <-synced:
		case <-ctx.Done():
			return fmt.Errorf("api server %s: load the RBAC policy: %w", s.cfg.Name, ctx.Err())
		}
	}
	return nil
}

// watchSink receives what a watch of one resource brings: every object
// after each complete list, then each change.
type watchSink struct {
	replace     func([]runtime.Object)
	set, delete func(runtime.Object)
}

// followResource watches one resource until ctx ends, telling sink each
// change; synced is called after each complete list.
func (s *Server) followResource(ctx context.Context, res *registry.Resource, sink watchSink, synced func()) {
	initial := true
	for ctx.Err() == nil {
		w, err := s.store.Watch(ctx, res, "", storage.WatchOptions{SendInitialEvents: &initial, AllowBookmarks: true})
		if err != nil {
			if !waitOrDone(ctx, time.Second) {
				return
			}
			continue
		}
		s.consumeWatch(ctx, w, sink, synced)
		w.Stop()
		if !waitOrDone(ctx, 100*time.Millisecond) {
			return
		}
	}
}

// consumeWatch applies one watch's events: the initial objects replace
// what the sink had, then each change follows.
func (s *Server) consumeWatch(ctx context.Context, w watch.Interface, sink watchSink, synced func()) {
	var listed []runtime.Object
	listing := true
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watch.Error:
				return
			case watch.Bookmark:
				if listing && isInitialEventsEnd(ev.Object) {
					listing = false
					sink.replace(listed)
					listed = nil
					synced()
				}
			case watch.Added, watch.Modified:
				if listing {
					listed = append(listed, ev.Object)
				} else {
					sink.set(ev.Object)
				}
			case watch.Deleted:
				if !listing {
					sink.delete(ev.Object)
				}
			}
		}
	}
}

func isInitialEventsEnd(obj runtime.Object) bool {
	m, ok := obj.(metav1.Object)
	return ok && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// waitOrDone waits d, or less if ctx ends; it reports whether ctx is still
// live.
func waitOrDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reconcilePolicy makes sure the default roles and bindings exist and hold
// at least their default rules and subjects, as kube-apiserver's
// rbac/bootstrap-roles post-start hook does: a missing object is created;
// an existing one gets what it lacks added, never taken away, unless its
// rbac.authorization.kubernetes.io/autoupdate annotation is "false". Every
// API server does it at start; several at once only race to the same end.
func (s *Server) reconcilePolicy(ctx context.Context) error {
	// As upstream's reconciliation reads each default object before it
	// decides to write, the roles and bindings that exist are read first,
	// one list per resource; only a default that is missing, or lacks
	// something, is written. A server starting on a cluster that has its
	// policy (every start but the first: a restart, a restore) writes
	// nothing and runs no create through admission.
	have := map[string]runtime.Object{}
	for _, gvr := range []schema.GroupVersionResource{clusterRolesGVR, clusterRoleBindingsGVR, rolesGVR, roleBindingsGVR} {
		res, _ := s.reg.Lookup(gvr)
		list, err := s.store.List(ctx, res, "", storage.ListOptions{})
		if err != nil {
			return fmt.Errorf("bootstrap %s: %w", gvr.Resource, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return fmt.Errorf("bootstrap %s: %w", gvr.Resource, err)
		}
		for _, obj := range items {
			m := obj.(metav1.Object)
			have[policyKey(gvr, m.GetNamespace(), m.GetName())] = obj
		}
	}
	for _, obj := range auth.DefaultPolicy() {
		want := obj.(runtime.Object)
		m := obj.(metav1.Object)
		if cur, ok := have[policyKey(policyGVR(want), m.GetNamespace(), m.GetName())]; ok {
			if _, err := mergeDefault(cur.DeepCopyObject(), want); errors.Is(err, errUnchanged) {
				continue
			}
		}
		if err := s.reconcileDefault(ctx, want); err != nil {
			return err
		}
	}
	return nil
}

// policyKey names an RBAC object among all four resources.
func policyKey(gvr schema.GroupVersionResource, namespace, name string) string {
	return gvr.Resource + "/" + namespace + "/" + name
}

// policyGVR is the resource of an RBAC object.
func policyGVR(obj runtime.Object) schema.GroupVersionResource {
	switch obj.(type) {
	case *rbacv1.ClusterRole:
		return clusterRolesGVR
	case *rbacv1.ClusterRoleBinding:
		return clusterRoleBindingsGVR
	case *rbacv1.Role:
		return rolesGVR
	case *rbacv1.RoleBinding:
		return roleBindingsGVR
	}
	return schema.GroupVersionResource{}
}

func (s *Server) reconcileDefault(ctx context.Context, obj runtime.Object) error {
	gvr := policyGVR(obj)
	res, _ := s.reg.Lookup(gvr)
	m := obj.(metav1.Object)
	for attempt := 0; ; attempt++ {
		_, err := s.createObject(ctx, res, m.GetNamespace(), obj.DeepCopyObject(), writeParams{manager: kubeAPIServerManager})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bootstrap %s %s: %w", gvr.Resource, m.GetName(), err)
		}
		_, err = s.store.GuaranteedUpdate(ctx, res, m.GetNamespace(), m.GetName(), func(current runtime.Object) (runtime.Object, error) {
			return mergeDefault(current.DeepCopyObject(), obj)
		})
		switch {
		case err == nil, errors.Is(err, errUnchanged):
			return nil
		case apierrors.IsNotFound(err) && attempt < 3:
			continue // deleted in between: create it again
		default:
			return fmt.Errorf("reconcile %s %s: %w", gvr.Resource, m.GetName(), err)
		}
	}
}

// errUnchanged ends an update that would write nothing.
var errUnchanged = errors.New("unchanged")

// mergeDefault adds to current what the default object want has and it
// lacks: labels, annotations, rules (those current's rules do not cover),
// aggregation selectors and subjects. It returns errUnchanged when there is
// nothing to add or current opts out of updates.
func mergeDefault(current, want runtime.Object) (runtime.Object, error) {
	cm, wm := current.(metav1.Object), want.(metav1.Object)
	if cm.GetAnnotations()[auth.AutoUpdateAnnotation] == "false" {
		return nil, errUnchanged
	}
	before := current.DeepCopyObject()
	cm.SetLabels(mergeMap(cm.GetLabels(), wm.GetLabels()))
	cm.SetAnnotations(mergeMap(cm.GetAnnotations(), wm.GetAnnotations()))
	switch c := current.(type) {
	case *rbacv1.ClusterRole:
		w := want.(*rbacv1.ClusterRole)
		if w.AggregationRule != nil {
			// The aggregation controller owns an aggregated role's rules.
			if c.AggregationRule == nil {
				c.AggregationRule = &rbacv1.AggregationRule{}
			}
			for _, sel := range w.AggregationRule.ClusterRoleSelectors {
				if !slices.ContainsFunc(c.AggregationRule.ClusterRoleSelectors, func(have metav1.LabelSelector) bool { return reflect.DeepEqual(have, sel) }) {
					c.AggregationRule.ClusterRoleSelectors = append(c.AggregationRule.ClusterRoleSelectors, sel)
				}
			}
		} else {
			c.Rules = addMissingRules(c.Rules, w.Rules)
		}
	case *rbacv1.Role:
		c.Rules = addMissingRules(c.Rules, want.(*rbacv1.Role).Rules)
	case *rbacv1.ClusterRoleBinding:
		if c.Name == auth.NodeRole {
			// Earlier klab bound system:node to system:nodes, before it
			// had a Node authorizer; that subject would give every
			// kubelet every node's secrets, so it goes.
			c.Subjects = slices.DeleteFunc(c.Subjects, func(s rbacv1.Subject) bool {
				return s.Kind == rbacv1.GroupKind && s.Name == auth.NodesGroup
			})
		}
		c.Subjects = addMissingSubjects(c.Subjects, want.(*rbacv1.ClusterRoleBinding).Subjects)
	case *rbacv1.RoleBinding:
		c.Subjects = addMissingSubjects(c.Subjects, want.(*rbacv1.RoleBinding).Subjects)
	}
	if reflect.DeepEqual(before, current) {
		return nil, errUnchanged
	}
	return current, nil
}

func mergeMap(have, want map[string]string) map[string]string {
	if len(want) == 0 {
		return have
	}
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// addMissingRules appends each wanted rule that have does not already
// cover.
func addMissingRules(have, want []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	for _, r := range want {
		if covered, _ := rbacvalidation.Covers(have, []rbacv1.PolicyRule{r}); !covered {
			have = append(have, r)
		}
	}
	return have
}

func addMissingSubjects(have, want []rbacv1.Subject) []rbacv1.Subject {
	for _, s := range want {
		if !slices.Contains(have, s) {
			have = append(have, s)
		}
	}
	return have
}

// notePolicyWrite applies an RBAC object this server just wrote to its
// authorizer at once, so that the writer's next request sees it (kubectl
// create rolebinding, then kubectl auth can-i); the watch brings the same
// change, and every other server's, a moment later.
func (s *Server) notePolicyWrite(obj runtime.Object, deleted bool) {
	switch obj.(type) {
	case *rbacv1.Role, *rbacv1.ClusterRole, *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
	default:
		return
	}
	if deleted {
		s.authz.Delete(obj)
	} else {
		s.authz.Set(obj)
	}
}
