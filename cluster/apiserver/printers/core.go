package printers

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Node role labels: node-role.kubernetes.io/<role> (any value) and the older
// kubernetes.io/role=<role>.
const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	labelNodeRole       = "kubernetes.io/role"
)

// printNamespace prints NAME STATUS AGE; STATUS is the phase (Active,
// Terminating).
func printNamespace(ns *corev1.Namespace, now time.Time) metav1.TableRow {
	return cells(ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp, now))
}

// printNode prints NAME STATUS ROLES AGE VERSION, and for -o wide INTERNAL-IP
// EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME.
//
// STATUS comes from the Ready condition alone: Ready, NotReady (False or
// Unknown), or Unknown when the node has never reported one; a cordoned node
// adds SchedulingDisabled ("Ready,SchedulingDisabled").
func printNode(node *corev1.Node, now time.Time) metav1.TableRow {
	var status []string
	// The last Ready condition counts, should there be several.
	var readyCondition *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			readyCondition = &node.Status.Conditions[i]
		}
	}
	switch {
	case readyCondition == nil:
		status = append(status, "Unknown")
	case readyCondition.Status == corev1.ConditionTrue:
		status = append(status, string(corev1.NodeReady))
	default:
		status = append(status, "Not"+string(corev1.NodeReady))
	}
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}

	roles := strings.Join(nodeRoles(node), ",")
	info := node.Status.NodeInfo
	return cells(
		node.Name,
		strings.Join(status, ","),
		orNone(roles),
		age(node.CreationTimestamp, now),
		info.KubeletVersion,
		orNone(nodeAddress(node, corev1.NodeInternalIP)),
		orNone(nodeAddress(node, corev1.NodeExternalIP)),
		orUnknown(info.OSImage),
		orUnknown(info.KernelVersion),
		orUnknown(info.ContainerRuntimeVersion),
	)
}

// nodeRoles returns the node's roles from its role labels, sorted.
func nodeRoles(node *corev1.Node) []string {
	roles := map[string]bool{}
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				roles[role] = true
			}
		case k == labelNodeRole && v != "":
			roles[v] = true
		}
	}
	return slices.Sorted(maps.Keys(roles))
}

// nodeAddress returns the node's first address of type t, or "".
func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}

// orUnknown returns s, or <unknown> when it is empty.
func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// printService prints NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, and for
// -o wide SELECTOR. PORT(S) lists port/protocol, with the node port when
// there is one ("80:30080/TCP").
func printService(svc *corev1.Service, now time.Time) metav1.TableRow {
	// spec.clusterIPs[0] is what upstream prints; kube-apiserver keeps it
	// equal to spec.clusterIP, which stands in should a stored object lack it.
	clusterIP := svc.Spec.ClusterIP
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}

	ports := make([]string, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}

	return cells(
		svc.Name,
		string(svc.Spec.Type),
		orNone(clusterIP),
		serviceExternalIP(svc),
		orNone(strings.Join(ports, ",")),
		age(svc.CreationTimestamp, now),
		labels.FormatLabels(svc.Spec.Selector),
	)
}

// serviceExternalIP is EXTERNAL-IP: the external IPs, with a load balancer's
// ingress points before them; <pending> for a load balancer not yet given
// any; the DNS name of an ExternalName service.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return orNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeLoadBalancer:
		ingress := map[string]bool{}
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ingress[in.IP] = true
			} else if in.Hostname != "" {
				ingress[in.Hostname] = true
			}
		}
		all := append(slices.Sorted(maps.Keys(ingress)), svc.Spec.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// printEndpoints prints NAME ENDPOINTS AGE: the first three ready addresses
// with each port ("10.244.1.5:8080"), or bare IPs for a service without
// ports.
func printEndpoints(ep *corev1.Endpoints, now time.Time) metav1.TableRow {
	list := []string{}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				list = append(list, a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	cell := none
	if len(ep.Subsets) > 0 {
		// Subsets without ready addresses print as an empty cell, not <none>.
		cell = firstThree(list, "")
	}
	return cells(ep.Name, cell, age(ep.CreationTimestamp, now))
}

// printEndpointSlice prints NAME ADDRESSTYPE PORTS ENDPOINTS AGE; an empty
// list shows <unset>, an unnamed port without a number "*".
func printEndpointSlice(slice *discoveryv1.EndpointSlice, now time.Time) metav1.TableRow {
	ports := make([]string, 0, len(slice.Ports))
	for _, p := range slice.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	var addresses []string
	for _, e := range slice.Endpoints {
		addresses = append(addresses, e.Addresses...)
	}
	return cells(
		slice.Name,
		string(slice.AddressType),
		firstThree(ports, "<unset>"),
		firstThree(addresses, "<unset>"),
		age(slice.CreationTimestamp, now),
	)
}

// printConfigMap prints NAME DATA AGE; DATA counts data and binaryData keys.
func printConfigMap(cm *corev1.ConfigMap, now time.Time) metav1.TableRow {
	return cells(cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), age(cm.CreationTimestamp, now))
}

// printSecret prints NAME TYPE DATA AGE. Write-only stringData keys count as
// data, as they become data when kube-apiserver converts the Secret.
func printSecret(s *corev1.Secret, now time.Time) metav1.TableRow {
	keys := len(s.Data)
	for k := range s.StringData {
		if _, ok := s.Data[k]; !ok {
			keys++
		}
	}
	return cells(s.Name, string(s.Type), int64(keys), age(s.CreationTimestamp, now))
}

// printServiceAccount prints NAME SECRETS AGE; SECRETS counts the legacy
// token secrets listed in the account (0 since tokens became short-lived).
func printServiceAccount(sa *corev1.ServiceAccount, now time.Time) metav1.TableRow {
	return cells(sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now))
}

// printLease prints NAME HOLDER AGE; HOLDER is the holder identity (a leader
// elector's id, a node's name), empty when nobody holds the lease.
func printLease(lease *coordinationv1.Lease, now time.Time) metav1.TableRow {
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	return cells(lease.Name, holder, age(lease.CreationTimestamp, now))
}
