package apiserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/cluster/apiserver/auth"
)

// Admission operations, as upstream's admission.Operation names them in
// NodeRestriction's messages.
const (
	opCreate = "CREATE"
	opUpdate = "UPDATE"
	opDelete = "DELETE"
)

// admission is what the NodeRestriction plugin looks at in one write,
// after upstream's admission.Attributes.
type admission struct {
	user        auth.User
	op          string
	gr          schema.GroupResource
	subresource string
	namespace   string
	name        string
	obj, old    runtime.Object
}

// forbidden is upstream's admission.NewForbidden: the resource and name
// (from the object when the request has none) and the plugin's reason.
func (a *admission) forbidden(err error) error {
	name := a.name
	if name == "" && a.obj != nil {
		if m, merr := meta.Accessor(a.obj); merr == nil {
			name = m.GetName()
		}
	}
	return apierrors.NewForbidden(a.gr, name, err)
}

// admissionFor describes req's write of obj (over old, for an update).
func admissionFor(req *request, op string, obj, old runtime.Object) *admission {
	return &admission{
		user: req.user, op: op, gr: req.res.GroupResource(), subresource: req.info.subresource,
		namespace: req.info.namespace, name: req.info.name, obj: obj, old: old,
	}
}

// admitNodeRestriction is upstream's NodeRestriction admission plugin
// (plugin/pkg/admission/noderestriction): a kubelet may write only what
// concerns its own node. It creates, updates and deletes only its own
// Node (without taking kubernetes.io labels it does not own, or
// node-restriction.kubernetes.io ones, and without changing its taints),
// creates only mirror pods bound to itself, deletes only its pods,
// updates only its pods' status, evicts only its pods, asks tokens only
// bound to its pods, and touches only its own Lease. Writes by anybody
// else pass untouched.
func (s *Server) admitNodeRestriction(ctx context.Context, a *admission) error {
	node, isNode := auth.NodeIdentity(a.user)
	if !isNode {
		return nil
	}
	if node == "" {
		return a.forbidden(fmt.Errorf("could not determine node from user %q", a.user.Name))
	}
	switch a.gr {
	case schema.GroupResource{Resource: "pods"}:
		switch a.subresource {
		case "":
			return s.admitNodePod(ctx, node, a)
		case "status":
			return admitNodePodStatus(node, a)
		case "eviction":
			return s.admitNodeEviction(ctx, node, a)
		default:
			return a.forbidden(fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.subresource))
		}
	case schema.GroupResource{Resource: "nodes"}:
		return admitNodeNode(node, a)
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		if a.subresource != "status" {
			return a.forbidden(errors.New("may only update PVC status"))
		}
		return nil
	case schema.GroupResource{Resource: "serviceaccounts"}:
		return s.admitNodeToken(ctx, node, a)
	case schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}:
		return admitNodeLease(node, a)
	case schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}:
		name := a.name
		if a.op == opCreate {
			if m, err := meta.Accessor(a.obj); err == nil {
				name = m.GetName()
			}
		}
		if name != node {
			return a.forbidden(errors.New("can only access CSINode with the same name as the requesting node"))
		}
	}
	return nil
}

func (s *Server) existingPod(ctx context.Context, a *admission, name string) (*corev1.Pod, error) {
	res, _ := s.reg.Lookup(podsGVR)
	obj, err := s.getObject(ctx, res, a.namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil {
		return nil, a.forbidden(err)
	}
	return obj.(*corev1.Pod), nil
}

func (s *Server) admitNodePod(ctx context.Context, node string, a *admission) error {
	switch a.op {
	case opCreate:
		return s.admitNodeMirrorPod(ctx, node, a)
	case opDelete:
		pod, err := s.existingPod(ctx, a, a.name)
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != node {
			return a.forbidden(fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node))
		}
		return nil
	default:
		return a.forbidden(fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.op, node))
	}
}

func (s *Server) admitNodeMirrorPod(ctx context.Context, node string, a *admission) error {
	pod, ok := a.obj.(*corev1.Pod)
	if !ok {
		return a.forbidden(fmt.Errorf("unexpected type %T", a.obj))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
		return a.forbidden(fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, node))
	}
	if pod.Spec.NodeName != node {
		return a.forbidden(fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", node))
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return a.forbidden(fmt.Errorf("node %q can only create pods with an owner reference set to itself", node))
	case 1:
	default:
		return a.forbidden(fmt.Errorf("node %q can only create pods with a single owner reference set to itself", node))
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != node {
		return a.forbidden(fmt.Errorf("node %q can only create pods with an owner reference set to itself", node))
	}
	if owner.Controller == nil || !*owner.Controller {
		return a.forbidden(fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", node))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return a.forbidden(fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", node))
	}
	nodesRes, _ := s.reg.Lookup(nodesGVR)
	obj, err := s.getObject(ctx, nodesRes, "", node)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return a.forbidden(fmt.Errorf("error looking up node %s to verify uid: %v", node, err))
	}
	if uid := obj.(*corev1.Node).UID; owner.UID != uid {
		return a.forbidden(fmt.Errorf("node %s UID mismatch: expected %s got %s", node, uid, owner.UID))
	}
	if pod.Spec.ServiceAccountName != "" {
		return a.forbidden(fmt.Errorf("node %q can not create pods that reference a service account", node))
	}
	refs := auth.PodReferences(pod)
	for _, ref := range []struct {
		kind auth.VertexKind
		what string
	}{{auth.SecretVertex, "secrets"}, {auth.ConfigMapVertex, "configmaps"}, {auth.PVCVertex, "persistentvolumeclaims"}} {
		if slices.ContainsFunc(refs, func(r auth.PodReference) bool { return r.Kind == ref.kind }) {
			return a.forbidden(fmt.Errorf("node %q can not create pods that reference %s", node, ref.what))
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return a.forbidden(fmt.Errorf("node %q can not create pods that reference resourceclaims", node))
	}
	return nil
}

func admitNodePodStatus(node string, a *admission) error {
	if a.op != opUpdate {
		return a.forbidden(fmt.Errorf("unexpected operation %q", a.op))
	}
	old, ok := a.old.(*corev1.Pod)
	if !ok {
		return a.forbidden(fmt.Errorf("unexpected type %T", a.old))
	}
	if old.Spec.NodeName != node {
		return a.forbidden(fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node))
	}
	pod, ok := a.obj.(*corev1.Pod)
	if !ok {
		return a.forbidden(fmt.Errorf("unexpected type %T", a.obj))
	}
	if !maps.Equal(old.Labels, pod.Labels) {
		return a.forbidden(fmt.Errorf("node %q cannot update labels through pod status", node))
	}
	if !apiequality.Semantic.DeepEqual(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) {
		return a.forbidden(fmt.Errorf("node %q cannot update resource claim statues", node))
	}
	return nil
}

func (s *Server) admitNodeEviction(ctx context.Context, node string, a *admission) error {
	if a.op != opCreate {
		return a.forbidden(fmt.Errorf("unexpected operation %s", a.op))
	}
	eviction, ok := a.obj.(*policyv1.Eviction)
	if !ok {
		return a.forbidden(fmt.Errorf("unexpected type %T", a.obj))
	}
	name := a.name
	if name == "" {
		if eviction.Name == "" {
			return apierrors.NewBadRequest("could not determine pod from request data")
		}
		name = eviction.Name
	}
	pod, err := s.existingPod(ctx, a, name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != node {
		return a.forbidden(fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", node))
	}
	return nil
}

func admitNodeNode(node string, a *admission) error {
	name := a.name
	if a.op == opCreate {
		if n, ok := a.obj.(*corev1.Node); ok {
			name = n.Name
		}
	}
	if name != node {
		return a.forbidden(fmt.Errorf("node %q is not allowed to modify node %q", node, name))
	}
	switch a.op {
	case opCreate:
		n, ok := a.obj.(*corev1.Node)
		if !ok {
			return a.forbidden(fmt.Errorf("unexpected type %T", a.obj))
		}
		if n.Spec.ConfigSource != nil {
			return a.forbidden(fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", node))
		}
		if labels := forbiddenNodeLabels(modifiedLabels(n.Labels, nil)); len(labels) > 0 {
			return a.forbidden(fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(labels, ", ")))
		}
	case opUpdate:
		n, ok := a.obj.(*corev1.Node)
		if !ok {
			return a.forbidden(fmt.Errorf("unexpected type %T", a.obj))
		}
		old, ok := a.old.(*corev1.Node)
		if !ok {
			return a.forbidden(fmt.Errorf("unexpected type %T", a.old))
		}
		if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return a.forbidden(fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", node))
		}
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return a.forbidden(fmt.Errorf("node %q is not allowed to modify taints", node))
		}
		if labels := forbiddenNodeLabels(modifiedLabels(n.Labels, old.Labels)); len(labels) > 0 {
			return a.forbidden(fmt.Errorf("is not allowed to modify labels: %s", strings.Join(labels, ", ")))
		}
	}
	return nil
}

// modifiedLabels returns, sorted, the keys whose values differ between
// a and b, either missing included.
func modifiedLabels(a, b map[string]string) []string {
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			keys = append(keys, k)
		}
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || v != w {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// labelNodeRestrictionNamespace is upstream's
// v1.LabelNamespaceNodeRestriction: labels under it are for
// administrators to steer workloads with, so no kubelet may set them.
const labelNodeRestrictionNamespace = "node-restriction.kubernetes.io"

// kubeletLabels are the kubernetes.io labels a kubelet may set on its
// Node, and kubeletLabelNamespaces the namespaces of the ones it may set
// freely (upstream's pkg/kubelet/apis IsKubeletLabel).
var (
	kubeletLabels = []string{
		corev1.LabelHostname, corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
		corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion,
		corev1.LabelInstanceType, corev1.LabelInstanceTypeStable,
		corev1.LabelOSStable, corev1.LabelArchStable, "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
	}
	kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
)

func labelNamespace(key string) string {
	if prefix, _, ok := strings.Cut(key, "/"); ok {
		return prefix
	}
	return ""
}

func inNamespace(namespace, parent string) bool {
	return namespace == parent || strings.HasSuffix(namespace, "."+parent)
}

// forbiddenNodeLabels returns the keys of labels no kubelet may set or
// change: node-restriction.kubernetes.io ones, and kubernetes.io and
// k8s.io ones that are not the kubelet's own.
func forbiddenNodeLabels(keys []string) []string {
	var out []string
	for _, key := range keys {
		ns := labelNamespace(key)
		if inNamespace(ns, labelNodeRestrictionNamespace) {
			out = append(out, key)
			continue
		}
		kubernetes := inNamespace(ns, "kubernetes.io") || inNamespace(ns, "k8s.io")
		if kubernetes && !isKubeletLabel(key) {
			out = append(out, key)
		}
	}
	return out
}

func isKubeletLabel(key string) bool {
	if slices.Contains(kubeletLabels, key) {
		return true
	}
	ns := labelNamespace(key)
	return slices.ContainsFunc(kubeletLabelNamespaces, func(allowed string) bool { return inNamespace(ns, allowed) })
}

// admitNodeToken lets a kubelet ask a token only bound to a pod on its
// node.
func (s *Server) admitNodeToken(ctx context.Context, node string, a *admission) error {
	if a.op != opCreate || a.subresource != "token" {
		return nil
	}
	tr, ok := a.obj.(*authenticationv1.TokenRequest)
	if !ok {
		return a.forbidden(fmt.Errorf("unexpected type %T", a.obj))
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return a.forbidden(errors.New("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return a.forbidden(errors.New("node requested token with a pod binding without a uid"))
	}
	pod, err := s.existingPod(ctx, a, ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return a.forbidden(fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != node {
		return a.forbidden(errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	return nil
}

func admitNodeLease(node string, a *admission) error {
	if a.namespace != auth.NodeLeaseNamespace {
		return a.forbidden(fmt.Errorf("can only access leases in the %q system namespace", auth.NodeLeaseNamespace))
	}
	name := a.name
	if a.op == opCreate {
		lease, ok := a.obj.(*coordinationv1.Lease)
		if !ok {
			return a.forbidden(fmt.Errorf("unexpected type %T", a.obj))
		}
		name = lease.Name
	}
	if name != node {
		return a.forbidden(errors.New("can only access node lease with the same name as the requesting node"))
	}
	return nil
}
