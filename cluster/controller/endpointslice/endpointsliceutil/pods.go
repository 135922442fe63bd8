// Package endpointsliceutil holds what the endpoints and EndpointSlice
// controllers share, as upstream's k8s.io/endpointslice/util does: which
// pods belong in a Service's endpoints, how a Service port resolves to a
// container port, which Services a pod change concerns, and the trigger
// time behind the endpoints.kubernetes.io/last-change-trigger-time
// annotation. Both controllers decide these the same way, so a student
// comparing a Service's Endpoints and its EndpointSlices sees the same pods.
package endpointsliceutil

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ShouldPodBeInEndpoints reports whether a pod belongs in a Service's
// Endpoints or EndpointSlices: it has an IP and has not finished (a pod in
// phase Succeeded or Failed never serves again). A pod being deleted is
// kept only when includeTerminating is true: EndpointSlices keep it with
// the terminating condition; Endpoints drop it unless the Service
// publishes not-ready addresses.
func ShouldPodBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	if !includeTerminating && pod.DeletionTimestamp != nil {
		return false
	}
	return true
}

// ShouldSetHostname reports whether an endpoint for pod carries the pod's
// hostname: only when the pod names this Service as its subdomain, which is
// what gives it the DNS name <hostname>.<service>.<namespace>.
func ShouldSetHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && svc.Namespace == pod.Namespace
}

// FindPort resolves a Service port's targetPort on a pod: a number is used
// as it is; a name is looked up among the ports of the pod's containers
// (and of its sidecars, init containers that always restart) with the same
// protocol. The error text is upstream's.
func FindPort(pod *corev1.Pod, svcPort *corev1.ServicePort) (int, error) {
	target := svcPort.TargetPort
	switch target.Type {
	case intstr.Int:
		return target.IntValue(), nil
	case intstr.String:
		if port, ok := namedPort(pod.Spec.Containers, target.StrVal, svcPort.Protocol); ok {
			return port, nil
		}
		var sidecars []corev1.Container
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecars = append(sidecars, c)
			}
		}
		if port, ok := namedPort(sidecars, target.StrVal, svcPort.Protocol); ok {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no suitable port for manifest: %s", pod.UID)
}

func namedPort(containers []corev1.Container, name string, protocol corev1.Protocol) (int, bool) {
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.Name == name && p.Protocol == protocol {
				return int(p.ContainerPort), true
			}
		}
	}
	return 0, false
}
