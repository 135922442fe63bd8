package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

var scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// serveSubresource serves status, scale, binding, log, the streaming
// subresources (exec, attach, portforward), proxy, token and approval.
func (s *Server) serveSubresource(w http.ResponseWriter, req *request) {
	sub := req.info.subresource
	if !req.res.HasSubresource(sub) || req.info.name == "" {
		writeError(w, req.Request, notFoundResource())
		return
	}
	verb := req.info.verb
	switch {
	case sub == registry.SubStatus && verb == registry.VerbGet:
		s.get(w, req)
	case sub == registry.SubStatus && verb == registry.VerbUpdate:
		s.update(w, req)
	case sub == registry.SubStatus && verb == registry.VerbPatch:
		s.patch(w, req)
	case sub == registry.SubScale && (verb == registry.VerbGet || verb == registry.VerbUpdate || verb == registry.VerbPatch):
		s.scale(w, req)
	case sub == registry.SubBinding && verb == registry.VerbCreate:
		s.bind(w, req)
	case sub == registry.SubEviction && verb == registry.VerbCreate:
		s.evict(w, req)
	case sub == registry.SubLog && verb == registry.VerbGet:
		s.podLog(w, req)
	case sub == registry.SubFinalize && verb == registry.VerbUpdate:
		s.update(w, req)
	case (sub == registry.SubExec || sub == registry.SubAttach || sub == registry.SubPortForward) &&
		(verb == registry.VerbGet || verb == registry.VerbCreate):
		s.serveConnect(w, req)
	case sub == registry.SubProxy:
		s.serveProxy(w, req)
	case sub == registry.SubApproval && verb == registry.VerbGet:
		s.get(w, req)
	case sub == registry.SubApproval && verb == registry.VerbUpdate:
		s.update(w, req)
	case sub == registry.SubApproval && verb == registry.VerbPatch:
		s.patch(w, req)
	case sub == registry.SubToken && verb == registry.VerbCreate:
		s.createToken(w, req)
	default:
		writeError(w, req.Request, apierrors.NewMethodNotSupported(schemaGroupResource(req.res.Group, req.res.Resource+"/"+sub), verb))
	}
}

// --- scale ---

// scaleOf returns the autoscaling/v1 Scale view of a deployment or
// replica set.
func scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
	scale := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}}
	var selector *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		scale.ObjectMeta = metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion, CreationTimestamp: o.CreationTimestamp}
		scale.Spec.Replicas = derefInt32(o.Spec.Replicas)
		scale.Status.Replicas = o.Status.Replicas
		selector = o.Spec.Selector
	case *appsv1.ReplicaSet:
		scale.ObjectMeta = metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion, CreationTimestamp: o.CreationTimestamp}
		scale.Spec.Replicas = derefInt32(o.Spec.Replicas)
		scale.Status.Replicas = o.Status.Replicas
		selector = o.Spec.Selector
	case *appsv1.StatefulSet:
		scale.ObjectMeta = metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion, CreationTimestamp: o.CreationTimestamp}
		scale.Spec.Replicas = derefInt32(o.Spec.Replicas)
		scale.Status.Replicas = o.Status.Replicas
		selector = o.Spec.Selector
	case *corev1.ReplicationController:
		// Upstream's RC scale prints the plain label map as its selector.
		scale.ObjectMeta = metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion, CreationTimestamp: o.CreationTimestamp}
		scale.Spec.Replicas = derefInt32(o.Spec.Replicas)
		scale.Status.Replicas = o.Status.Replicas
		scale.Status.Selector = labels.SelectorFromSet(o.Spec.Selector).String()
		return scale, nil
	default:
		return nil, fmt.Errorf("%T has no scale subresource", obj)
	}
	if selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return nil, err
		}
		scale.Status.Selector = sel.String()
	}
	return scale, nil
}

// withReplicas returns obj with the scale's replica count.
func withReplicas(obj runtime.Object, scale *autoscalingv1.Scale) runtime.Object {
	n := scale.Spec.Replicas
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
		o.ResourceVersion = scale.ResourceVersion
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
		o.ResourceVersion = scale.ResourceVersion
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &n
		o.ResourceVersion = scale.ResourceVersion
	case *corev1.ReplicationController:
		o.Spec.Replicas = &n
		o.ResourceVersion = scale.ResourceVersion
	}
	return obj
}

func (s *Server) scale(w http.ResponseWriter, req *request) {
	// The update path below works on the parent resource.
	parent := *req
	parent.info.subresource = ""
	parent.fieldsSubresource = registry.SubScale
	var (
		result runtime.Object
		err    error
	)
	switch req.info.verb {
	case registry.VerbGet:
		result, err = s.getObject(req.Context(), req.res, req.info.namespace, req.info.name)
	case registry.VerbUpdate:
		var data []byte
		if data, err = readBody(req.Request); err != nil {
			break
		}
		scale := &autoscalingv1.Scale{}
		if _, err = decodeObject(req.Request, data, scale, scaleGVK); err != nil {
			break
		}
		if scale.Spec.Replicas < 0 {
			err = apierrors.NewInvalid(scaleGVK.GroupKind(), req.info.name, invalidReplicas(scale.Spec.Replicas))
			break
		}
		result, err = s.updateObject(req.Context(), &parent, func(current runtime.Object) (runtime.Object, error) {
			return withReplicas(current, scale), nil
		})
	case registry.VerbPatch:
		view := func(current runtime.Object) (runtime.Object, error) { return scaleOf(current) }
		newScale := func() runtime.Object { return &autoscalingv1.Scale{} }
		fold := func(current, patched runtime.Object) (runtime.Object, error) {
			scale := patched.(*autoscalingv1.Scale)
			if scale.Spec.Replicas < 0 {
				return nil, apierrors.NewInvalid(scaleGVK.GroupKind(), req.info.name, invalidReplicas(scale.Spec.Replicas))
			}
			return withReplicas(current, scale), nil
		}
		result, _, err = s.patchObject(&parent, view, newScale, fold)
	}
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	scale, err := scaleOf(result)
	if err != nil {
		writeError(w, req.Request, apierrors.NewInternalError(err))
		return
	}
	writeRaw(w, http.StatusOK, negotiate(req.Request).yaml, scale)
}

// --- binding ---

// bind assigns a pod to a node, as the scheduler does through
// pods/binding: only an unassigned pod can be bound, and binding marks it
// PodScheduled.
func (s *Server) bind(w http.ResponseWriter, req *request) {
	data, err := readBody(req.Request)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	binding := &corev1.Binding{}
	if _, err := decodeObject(req.Request, data, binding, corev1.SchemeGroupVersion.WithKind("Binding")); err != nil {
		writeError(w, req.Request, err)
		return
	}
	if err := s.bindPod(req.Context(), req, binding); err != nil {
		writeError(w, req.Request, err)
		return
	}
	writeRaw(w, http.StatusCreated, false, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

func (s *Server) bindPod(ctx context.Context, req *request, binding *corev1.Binding) error {
	if binding.Name != "" && binding.Name != req.info.name {
		return apierrors.NewBadRequest(fmt.Sprintf("binding name %q does not match pod name %q", binding.Name, req.info.name))
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name,
			invalidField("target.kind", binding.Target.Kind, "must be empty or 'Node'"))
	}
	if binding.Target.Name == "" {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name,
			requiredField("target.name"))
	}
	podsRes, _ := s.reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	bound, err := s.store.GuaranteedUpdate(ctx, podsRes, req.info.namespace, req.info.name, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(podsRes.GroupResource(), pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if binding.UID != "" && binding.UID != pod.UID {
			return nil, apierrors.NewConflict(podsRes.GroupResource(), pod.Name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", binding.UID, pod.UID))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, pod.Name, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = binding.Target.Name
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		return pod, nil
	})
	if err == nil {
		s.notePodWrite(bound, false)
	}
	return err
}

func setPodCondition(status *corev1.PodStatus, cond corev1.PodCondition) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != cond.Type {
			continue
		}
		if c.Status != cond.Status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = cond.Status, cond.Reason, cond.Message
		return
	}
	cond.LastTransitionTime = now
	status.Conditions = append(status.Conditions, cond)
}

// --- log ---

// podLog proxies pods/log to the kubelet of the pod's node (its
// /containerLogs endpoint), as upstream does.
func (s *Server) podLog(w http.ResponseWriter, req *request) {
	obj, err := s.getObject(req.Context(), req.res, req.info.namespace, req.info.name)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	pod := obj.(*corev1.Pod)
	container, err := podContainer(pod, req.URL.Query().Get("container"))
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	base, err := s.kubeletURL(req.Context(), pod)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	opts, err := podLogOptions(req.URL.Query(), pod.Name)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	target := base.JoinPath("containerLogs", pod.Namespace, pod.Name, container)
	// The kubelet gets the options as decoded and checked, nothing else
	// of the query.
	target.RawQuery = opts.Encode()
	out, err := http.NewRequestWithContext(req.Context(), http.MethodGet, target.String(), nil)
	if err != nil {
		writeError(w, req.Request, apierrors.NewInternalError(err))
		return
	}
	resp, err := s.kubeletTransport.RoundTrip(out)
	if err != nil {
		writeError(w, req.Request, apierrors.NewServiceUnavailable(fmt.Sprintf("get logs from the kubelet on %s: %v", pod.Spec.NodeName, err)))
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32*1024)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// podLogOptions decodes and checks a pods/log query as upstream does
// (PodLogOptions and its validation), and returns the query to send on:
// the options it knows, in their canonical form, nothing else.
func podLogOptions(q url.Values, pod string) (url.Values, error) {
	out := url.Values{}
	if c := q.Get("container"); c != "" {
		out.Set("container", c)
	}
	for _, name := range []string{"follow", "previous", "timestamps", "insecureSkipTLSVerifyBackend"} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: Invalid value: %q: must be true or false", name, v))
		}
		if on {
			out.Set(name, "true")
		}
	}
	var errs field.ErrorList
	numbers := []struct {
		name string
		min  int64
		msg  string
	}{
		{"tailLines", 0, "must be greater than or equal to 0"},
		{"limitBytes", 1, "must be greater than 0"},
		{"sinceSeconds", 1, "must be greater than 0"},
	}
	for _, n := range numbers {
		v := q.Get(n.name)
		if v == "" {
			continue
		}
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: Invalid value: %q: must be an integer", n.name, v))
		}
		if i < n.min {
			errs = append(errs, field.Invalid(field.NewPath(n.name), i, n.msg))
		}
		out.Set(n.name, strconv.FormatInt(i, 10))
	}
	if v := q.Get("sinceTime"); v != "" {
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("sinceTime: Invalid value: %q: must be an RFC 3339 time", v))
		}
		if out.Has("sinceSeconds") {
			errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
		}
		out.Set("sinceTime", at.UTC().Format(time.RFC3339))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, pod, errs)
	}
	return out, nil
}

func derefInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
