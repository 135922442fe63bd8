package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/klab-dev/klab/cluster/apiserver/defaults"
	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/validation"
)

// Upstream's DefaultTolerationSeconds admission plugin: pods tolerate a
// not-ready or unreachable node for 300 s before they are evicted.
const defaultTolerationSeconds int64 = 300

// prepareForCreate sets what the server owns on a new object, as each
// resource's strategy PrepareForCreate does: identity and timestamps, a
// fresh status where the status belongs to a controller, generation 1
// for the kinds that have one (generation.go).
func prepareForCreate(res *registry.Resource, obj runtime.Object) {
	m, _ := meta.Accessor(obj)
	m.SetUID(types.UID(uuid.NewUUID()))
	m.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	if tracksGeneration(obj) {
		m.SetGeneration(1)
	} else {
		m.SetGeneration(0)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		// defaults.Default below starts it Pending with its QoS class.
		o.Status = corev1.PodStatus{}
	case *corev1.Namespace:
		o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	case *corev1.Service:
		o.Status = corev1.ServiceStatus{}
	case *corev1.ReplicationController:
		o.Status = corev1.ReplicationControllerStatus{}
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.ReplicaSet:
		o.Status = appsv1.ReplicaSetStatus{}
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{}
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{}
	case *batchv1.CronJob:
		o.Status = batchv1.CronJobStatus{}
	case *policyv1.PodDisruptionBudget:
		o.Status = policyv1.PodDisruptionBudgetStatus{}
	case *certificatesv1.CertificateSigningRequest:
		o.Status = certificatesv1.CertificateSigningRequestStatus{}
	case *corev1.ResourceQuota:
		o.Status = corev1.ResourceQuotaStatus{}
	}
	defaults.Default(obj)
}

// prepareForUpdate keeps what a client may not change through this
// endpoint: server-owned metadata always; the status through the main
// resource and everything but the status through /status. A change to
// the desired state bumps the generation (generation.go).
func prepareForUpdate(res *registry.Resource, sub string, obj, current runtime.Object) error {
	m, _ := meta.Accessor(obj)
	cm, _ := meta.Accessor(current)
	var errs field.ErrorList
	if m.GetUID() != "" && m.GetUID() != cm.GetUID() {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "uid"), m.GetUID(), "field is immutable"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK().GroupKind(), cm.GetName(), errs)
	}
	m.SetUID(cm.GetUID())
	m.SetCreationTimestamp(cm.GetCreationTimestamp())
	m.SetDeletionTimestamp(cm.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(cm.GetDeletionGracePeriodSeconds())
	m.SetGeneration(cm.GetGeneration())
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		prepareCSRUpdate(sub, csr, current.(*certificatesv1.CertificateSigningRequest))
		return nil
	}
	if sub == registry.SubStatus {
		if pod, ok := obj.(*corev1.Pod); ok {
			// As upstream's pod status strategy: a status write keeps its
			// metadata (the scheduler explains itself in annotations)
			// but not the spec, owner references or deletion stamp.
			cur := current.(*corev1.Pod)
			pod.Spec = cur.Spec
			pod.OwnerReferences = cur.OwnerReferences
			return nil
		}
		// Only the status and the annotations change (controllers record
		// their bookkeeping there, as the deployment controller does its
		// revision): take them onto a copy of the current object.
		status := reflect.ValueOf(obj).Elem().FieldByName("Status")
		annotations := m.GetAnnotations()
		target := reflect.ValueOf(current).Elem()
		if status.IsValid() {
			target.FieldByName("Status").Set(status)
		}
		reflect.ValueOf(obj).Elem().Set(target)
		m.SetAnnotations(annotations)
		keepHPAAnnotations(obj, current, hpaSpecAnnotations)
		return nil
	}
	if sub == registry.SubFinalize {
		// Only the namespace's spec finalizers change.
		ns, cur := obj.(*corev1.Namespace), current.(*corev1.Namespace).DeepCopy()
		cur.Spec.Finalizers = ns.Spec.Finalizers
		cur.ResourceVersion = ns.ResourceVersion
		*ns = *cur
		return nil
	}
	if svc, ok := obj.(*corev1.Service); ok {
		dropTypeDependentFields(svc, current.(*corev1.Service))
		keepAllocations(svc, current.(*corev1.Service))
	}
	if res.HasSubresource(registry.SubStatus) {
		if st := reflect.ValueOf(current).Elem().FieldByName("Status"); st.IsValid() {
			reflect.ValueOf(obj).Elem().FieldByName("Status").Set(st)
		}
		keepHPAAnnotations(obj, current, hpaStatusAnnotations)
	}
	defaults.Default(obj)
	if tracksGeneration(obj) && generationChanged(obj, current) {
		m.SetGeneration(cm.GetGeneration() + 1)
	}
	if m.GetDeletionTimestamp() != nil && !slices.Equal(m.GetFinalizers(), cm.GetFinalizers()) {
		// Removing finalizers is how controllers finish a deletion;
		// adding new ones is refused, as upstream.
		for _, f := range m.GetFinalizers() {
			if !slices.Contains(cm.GetFinalizers(), f) {
				return apierrors.NewForbidden(res.GroupResource(), cm.GetName(),
					fmt.Errorf("no new finalizers can be added if the object is being deleted, found new finalizers %q", []string{f}))
			}
		}
	}
	return nil
}

// admitNamespace is the NamespaceLifecycle plugin: objects are created
// only in a namespace that exists and is not being deleted.
func (s *Server) admitNamespace(ctx context.Context, namespace string) error {
	nsRes, _ := s.reg.Lookup(namespacesGVR)
	obj, err := s.store.Get(ctx, nsRes, "", namespace)
	if err != nil {
		return err
	}
	if ns := obj.(*corev1.Namespace); ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil {
		return apierrors.NewForbidden(schemaGroupResource("", "namespaces"), namespace,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
	}
	return nil
}

// immortalNamespaces are the namespaces NamespaceLifecycle never lets go:
// the cluster's own objects live in them.
var immortalNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// admitDelete is the NamespaceLifecycle plugin on deletes: default,
// kube-system and kube-public may not be deleted, whoever asks (a
// `kubectl delete ns --all` included), with upstream's message.
func admitDelete(res *registry.Resource, name string) error {
	if res.GVK().GroupKind() == corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind() && slices.Contains(immortalNamespaces, name) {
		return apierrors.NewForbidden(res.GroupResource(), name, errors.New("this namespace may not be deleted"))
	}
	return nil
}

// admitCreate runs the mutating admission plugins for new objects.
func (s *Server) admitCreate(ctx context.Context, res *registry.Resource, obj runtime.Object) error {
	if pc, ok := obj.(*schedulingv1.PriorityClass); ok {
		return s.admitPriorityClass(ctx, res, pc, false)
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	// ServiceAccount: every pod runs as a service account, "default"
	// unless it names one, and that account must exist.
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	// The deprecated serviceAccount field mirrors it, as upstream keeps it.
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	saRes, _ := s.reg.Lookup(serviceAccountsGVR)
	saObj, err := s.getObject(ctx, saRes, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return apierrors.NewForbidden(res.GroupResource(), pod.Name,
				fmt.Errorf("error looking up service account %s/%s: serviceaccount %q not found", pod.Namespace, pod.Spec.ServiceAccountName, pod.Spec.ServiceAccountName))
		}
		return err
	}
	// A mirror pod is the kubelet's record of a static pod, which holds
	// no API credentials.
	_, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]
	if sa, ok := saObj.(*corev1.ServiceAccount); ok && !mirror && automountServiceAccountToken(pod, sa) {
		mountServiceAccountToken(pod, randomSuffix)
	}
	// DefaultTolerationSeconds.
	addToleration(pod, corev1.TaintNodeNotReady)
	addToleration(pod, corev1.TaintNodeUnreachable)
	// Priority (priority.go).
	if err := s.admitPodPriority(ctx, res, pod); err != nil {
		return err
	}
	// LimitRanger (limitrange.go).
	return s.admitLimitRanges(ctx, res, pod)
}

func addToleration(pod *corev1.Pod, key string) {
	for _, t := range pod.Spec.Tolerations {
		if (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) && (t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
			return
		}
	}
	seconds := defaultTolerationSeconds
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
		Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds,
	})
}

// admitUpdate runs the admission plugins that also see updates.
func (s *Server) admitUpdate(ctx context.Context, res *registry.Resource, obj, current runtime.Object) error {
	switch o := obj.(type) {
	case *corev1.Pod:
		keepPodPriority(o, current.(*corev1.Pod))
	case *schedulingv1.PriorityClass:
		return s.admitPriorityClass(ctx, res, o, true)
	}
	return nil
}

func validateCreate(obj runtime.Object) field.ErrorList { return validation.ValidateCreate(obj) }

func validateUpdate(res *registry.Resource, sub string, obj, current runtime.Object) field.ErrorList {
	if sub == registry.SubStatus {
		return validation.ValidateStatusUpdate(obj, current)
	}
	if sub == registry.SubApproval {
		csr, ok1 := obj.(*certificatesv1.CertificateSigningRequest)
		cur, ok2 := current.(*certificatesv1.CertificateSigningRequest)
		if !ok1 || !ok2 {
			return field.ErrorList{field.InternalError(nil, fmt.Errorf("approval of %T", obj))}
		}
		return validation.ValidateCSRApprovalUpdate(csr, cur)
	}
	return validation.ValidateUpdate(obj, current)
}

// allocate gives a Service its ClusterIP and NodePorts (keeping those it
// already has on update) and returns a function that gives back what this
// call took, for when the write does not happen.
func (s *Server) allocate(ctx context.Context, res *registry.Resource, obj, current runtime.Object, dryRun bool) (func(), error) {
	svc, ok := obj.(*corev1.Service)
	if !ok || dryRun {
		return func() {}, nil
	}
	var old *corev1.Service
	if current != nil {
		old = current.(*corev1.Service)
	}
	var takenIPs []net.IP
	var takenPorts []int
	release := func() {
		bg, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, ip := range takenIPs {
			s.ips.Release(bg, ip)
		}
		for _, p := range takenPorts {
			s.ports.Release(bg, p)
		}
	}
	fail := func(path *field.Path, value any, err error) (func(), error) {
		release()
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return func() {}, apierrors.NewTimeoutError(err.Error(), 1)
		}
		return func() {}, apierrors.NewInvalid(res.GVK().GroupKind(), svc.Name, field.ErrorList{field.Invalid(path, value, err.Error())})
	}

	needsIP := svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
	switch {
	case !needsIP:
	case old != nil && old.Spec.ClusterIP != "" && old.Spec.ClusterIP == svc.Spec.ClusterIP:
		// Kept.
	case svc.Spec.ClusterIP == "":
		ip, err := s.ips.Allocate(ctx)
		if err != nil {
			return fail(field.NewPath("spec", "clusterIPs").Index(0), "", fmt.Errorf("failed to allocate IP: %w", err))
		}
		takenIPs = append(takenIPs, ip)
		svc.Spec.ClusterIP = ip.String()
	default:
		ip := net.ParseIP(svc.Spec.ClusterIP)
		if ip == nil {
			return fail(field.NewPath("spec", "clusterIP"), svc.Spec.ClusterIP, errors.New("must be a valid IP address"))
		}
		if err := s.ips.AllocateSpecific(ctx, ip); err != nil {
			return fail(field.NewPath("spec", "clusterIPs").Index(0), svc.Spec.ClusterIP, fmt.Errorf("failed to allocate IP %s: %w", svc.Spec.ClusterIP, err))
		}
		takenIPs = append(takenIPs, ip)
	}
	if needsIP && svc.Spec.ClusterIP != "" {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}

	if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		oldPorts := map[int32]bool{}
		if old != nil {
			for _, p := range old.Spec.Ports {
				oldPorts[p.NodePort] = p.NodePort != 0
			}
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			switch {
			case p.NodePort != 0 && oldPorts[p.NodePort]:
			case p.NodePort == 0:
				port, err := s.ports.Allocate(ctx)
				if err != nil {
					return fail(path, p.NodePort, fmt.Errorf("failed to allocate a nodePort: %w", err))
				}
				takenPorts = append(takenPorts, port)
				p.NodePort = int32(port)
			default:
				if err := s.ports.AllocateSpecific(ctx, int(p.NodePort)); err != nil {
					return fail(path, p.NodePort, err)
				}
				takenPorts = append(takenPorts, int(p.NodePort))
			}
		}
	}
	return release, nil
}

// releaseAll gives back a deleted Service's addresses and ports.
func (s *Server) releaseAll(ctx context.Context, res *registry.Resource, obj runtime.Object) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	if ip := net.ParseIP(svc.Spec.ClusterIP); ip != nil {
		s.ips.Release(ctx, ip)
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			s.ports.Release(ctx, int(p.NodePort))
		}
	}
}

// keepAllocations carries a Service's ClusterIP and NodePorts over to an
// update that leaves them out (kubectl replace of a manifest without them),
// as upstream's service REST does before validating.
func keepAllocations(svc, old *corev1.Service) {
	if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) == 0 && svc.Spec.Type == old.Spec.Type {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	}
	// NodePorts carry over only between types that use them: a manifest
	// that turns a NodePort Service into a ClusterIP one gives them up.
	if !needsNodePort(old) || !needsNodePort(svc) {
		return
	}
	if needsHealthCheckNodePort(old) && needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.NodePort != 0 {
			continue
		}
		for _, op := range old.Spec.Ports {
			if op.NodePort != 0 && op.Port == p.Port && op.Protocol == p.Protocol {
				p.NodePort = op.NodePort
			}
		}
	}
}
