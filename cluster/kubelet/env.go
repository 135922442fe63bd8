package kubelet

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// envBuilder collects variables in the order they are first defined; a
// later definition of a name replaces its value in place. A $(NAME)
// reference also finds the service variables in fallback, which join the
// list at the end.
type envBuilder struct {
	order    []string
	values   map[string]string
	fallback map[string]string
}

func (e *envBuilder) set(name, value string) {
	if e.values == nil {
		e.values = map[string]string{}
	}
	if _, ok := e.values[name]; !ok {
		e.order = append(e.order, name)
	}
	e.values[name] = value
}

func (e *envBuilder) lookup(name string) (string, bool) {
	if v, ok := e.values[name]; ok {
		return v, true
	}
	v, ok := e.fallback[name]
	return v, ok
}

func (e *envBuilder) list() []cri.KeyValue {
	out := make([]cri.KeyValue, 0, len(e.order))
	for _, n := range e.order {
		out = append(out, cri.KeyValue{Key: n, Value: e.values[n]})
	}
	return out
}

// containerEnv resolves a container's environment as upstream's
// makeEnvironmentVariables does: envFrom sources first, then env, where a
// value may refer to variables defined before it as $(NAME) and
// valueFrom reads the pod's own fields, its resources, ConfigMaps and
// Secrets. An error is a CreateContainerConfigError.
func (k *Kubelet) containerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, podIP string) (*envBuilder, error) {
	services, err := k.serviceEnv(pod)
	if err != nil {
		return nil, err
	}
	env := &envBuilder{fallback: services}
	for _, from := range c.EnvFrom {
		data, err := k.envFromData(ctx, pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for key := range data {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			name := from.Prefix + key
			if len(validation.IsEnvVarName(name)) > 0 {
				continue // upstream skips keys that are no variable names
			}
			env.set(name, data[key])
		}
	}
	for _, ev := range c.Env {
		switch {
		case ev.ValueFrom == nil:
			env.set(ev.Name, expand(ev.Value, env.lookup))
		default:
			value, skip, err := k.envValueFrom(ctx, pod, c, ev.ValueFrom, podIP)
			if err != nil {
				return nil, err
			}
			if !skip {
				env.set(ev.Name, value)
			}
		}
	}
	// The service variables come last, each unless the container defines
	// its name itself; sorted, where upstream's order is a map's.
	names := make([]string, 0, len(services))
	for name := range services {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, defined := env.values[name]; !defined {
			env.set(name, services[name])
		}
	}
	return env, nil
}

// envFromData reads the keys of an envFrom source; an optional source
// that does not exist gives none.
func (k *Kubelet) envFromData(ctx context.Context, namespace string, from v1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := k.client.CoreV1().ConfigMaps(namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				return nil, nil
			}
			return nil, notFoundAs(err, "configmap", from.ConfigMapRef.Name)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := k.client.CoreV1().Secrets(namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
				return nil, nil
			}
			return nil, notFoundAs(err, "secret", from.SecretRef.Name)
		}
		data := make(map[string]string, len(s.Data))
		for key, v := range s.Data {
			data[key] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

// notFoundAs words a missing object as upstream's kubelet does
// (`configmap "x" not found`).
func notFoundAs(err error, kind, name string) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %q not found", kind, name)
	}
	return fmt.Errorf("get %s %q: %w", kind, name, err)
}

// envValueFrom resolves one valueFrom; skip reports an optional key that
// is missing (the variable is then not set at all).
func (k *Kubelet) envValueFrom(ctx context.Context, pod *v1.Pod, c *v1.Container, from *v1.EnvVarSource, podIP string) (value string, skip bool, err error) {
	switch {
	case from.FieldRef != nil:
		v, err := k.podFieldValue(pod, from.FieldRef.FieldPath, podIP)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := k.resourceFieldValue(c, from.ResourceFieldRef)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, notFoundAs(err, "configmap", ref.Name)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, false, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), false, nil
		}
		if optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", true, nil
			}
			return "", false, notFoundAs(err, "secret", ref.Name)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), false, nil
		}
		if optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
	}
	return "", false, fmt.Errorf("env var source of container %q has no value", c.Name)
}

// podFieldValue is the downward API's value of a pod field.
func (k *Kubelet) podFieldValue(pod *v1.Pod, path, podIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return k.cfg.NodeIP, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "metadata.labels", "metadata.annotations":
		m := pod.Labels
		if path == "metadata.annotations" {
			m = pod.Annotations
		}
		keys := make([]string, 0, len(m))
		for key := range m {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		lines := make([]string, 0, len(keys))
		for _, key := range keys {
			lines = append(lines, fmt.Sprintf("%s=%q", key, m[key]))
		}
		return strings.Join(lines, "\n"), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return m[key], nil
			}
		}
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

// resourceFieldValue is the downward API's value of a container
// resource, in units of the divisor, rounded up; a limit that is not set
// is the node's allocatable, as upstream.
func (k *Kubelet) resourceFieldValue(c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	alloc := k.cfg.allocatable()
	var q resource.Quantity
	var name v1.ResourceName
	switch ref.Resource {
	case "limits.cpu", "limits.memory":
		name = v1.ResourceName(strings.TrimPrefix(ref.Resource, "limits."))
		l, ok := c.Resources.Limits[name]
		if !ok {
			l = alloc[name]
		}
		q = l
	case "requests.cpu", "requests.memory":
		name = v1.ResourceName(strings.TrimPrefix(ref.Resource, "requests."))
		q = c.Resources.Requests[name]
	default:
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == v1.ResourceCPU {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

// expand replaces each $(NAME) in s with the variable's value, as the
// kubelet expands env values, command and args: a reference to a name
// that is not defined stays as written, and $$ is a literal $ (so
// $$(NAME) gives $(NAME)).
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			ref := s[i : i+3+end]
			if v, ok := lookup(s[i+2 : i+2+end]); ok {
				b.WriteString(v)
			} else {
				b.WriteString(ref)
			}
			i += len(ref)
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String()
}

// expandAll expands every element.
func expandAll(list []string, lookup func(string) (string, bool)) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expand(s, lookup)
	}
	return out
}
