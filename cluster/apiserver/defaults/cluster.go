package defaults

import (
	corev1 "k8s.io/api/core/v1"
)

// defaultNamespace labels a Namespace with its own name, so that a
// namespaceSelector can pick namespaces by name, and starts it Active.
func defaultNamespace(ns *corev1.Namespace) {
	// A Namespace created with generateName has no name yet; upstream
	// cannot label it here either.
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// defaultNode makes a Node's allocatable its capacity when the kubelet
// reported only capacity.
func defaultNode(node *corev1.Node) {
	status := &node.Status
	if status.Allocatable == nil && status.Capacity != nil {
		status.Allocatable = status.Capacity.DeepCopy()
	}
}

// defaultSecret makes a Secret without a type Opaque and folds stringData
// into data. stringData is write-only: upstream merges it while converting
// to its internal version, where the field does not exist, so it is never
// stored or returned; a key in both takes the stringData value.
func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}
