// Package testing builds pods, nodes and snapshots for the plugins' table
// tests, after upstream's pkg/scheduler/testing: chainable wrappers so that
// a test case reads as one line ("a pod requesting 1 cpu on node-a"), and
// a Handle over a fixed list of NodeInfos.
package testing

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWrapper builds a pod.
type PodWrapper struct{ v1.Pod }

// MakePod returns a pod named "pod" in namespace "default".
func MakePod() *PodWrapper {
	return &PodWrapper{v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "default", UID: "pod"}}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Name sets the name and, so that pods stay distinct, the UID.
func (p *PodWrapper) Name(name string) *PodWrapper {
	p.Pod.Name, p.UID = name, types.UID(name)
	return p
}

// Namespace sets the namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// Label adds a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Node binds the pod to a node.
func (p *PodWrapper) Node(name string) *PodWrapper { p.Spec.NodeName = name; return p }

// Terminating marks the pod as being deleted.
func (p *PodWrapper) Terminating() *PodWrapper {
	now := metav1.NewTime(time.Unix(0, 0))
	p.DeletionTimestamp = &now
	return p
}

// Container adds a container running image and requesting the given
// quantities ("cpu": "500m"); no quantities means no requests.
func (p *PodWrapper) Container(image string, requests map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{
		Name:      "c" + string(rune('0'+len(p.Spec.Containers))),
		Image:     image,
		Resources: v1.ResourceRequirements{Requests: resourceList(requests)},
	})
	return p
}

// Req adds a container requesting the given quantities.
func (p *PodWrapper) Req(requests map[v1.ResourceName]string) *PodWrapper {
	return p.Container("app", requests)
}

// InitReq adds a regular (run-to-completion) init container requesting the
// given quantities.
func (p *PodWrapper) InitReq(requests map[v1.ResourceName]string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
		Name:      "init" + string(rune('0'+len(p.Spec.InitContainers))),
		Image:     "init",
		Resources: v1.ResourceRequirements{Requests: resourceList(requests)},
	})
	return p
}

// HostPort adds a container that binds hostIP:port/protocol on the node.
func (p *PodWrapper) HostPort(hostIP string, protocol v1.Protocol, port int32) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{
		Name:  "port" + string(rune('0'+len(p.Spec.Containers))),
		Image: "app",
		Ports: []v1.ContainerPort{{HostIP: hostIP, Protocol: protocol, HostPort: port, ContainerPort: port}},
	})
	return p
}

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(t v1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// NodeSelector sets the node selector.
func (p *PodWrapper) NodeSelector(sel map[string]string) *PodWrapper {
	p.Spec.NodeSelector = sel
	return p
}

func (p *PodWrapper) affinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// RequiredNodeAffinity adds a required node selector term with one
// requirement; several calls add ORed terms.
func (p *PodWrapper) RequiredNodeAffinity(key string, op v1.NodeSelectorOperator, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
	}
	ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, v1.NodeSelectorTerm{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
	})
	return p
}

// PreferredNodeAffinity adds a preferred node affinity term.
func (p *PodWrapper) PreferredNodeAffinity(weight int32, key string, op v1.NodeSelectorOperator, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.PreferredSchedulingTerm{Weight: weight, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
		}})
	return p
}

// PodAffinityTerm builds a pod (anti-)affinity term selecting pods with
// label key=value over topologyKey, in the pod's own namespace.
func PodAffinityTerm(topologyKey, key, value string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		TopologyKey:   topologyKey,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
	}
}

// PodAffinity adds a required pod affinity term.
func (p *PodWrapper) PodAffinity(t v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return p
}

// PodAntiAffinity adds a required pod anti-affinity term.
func (p *PodWrapper) PodAntiAffinity(t v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return p
}

// PreferredPodAffinity adds a preferred pod affinity term.
func (p *PodWrapper) PreferredPodAffinity(weight int32, t v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t})
	return p
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term.
func (p *PodWrapper) PreferredPodAntiAffinity(weight int32, t v1.PodAffinityTerm) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t})
	return p
}

// SpreadConstraint adds a topology spread constraint over pods with label
// key=value. A nil minDomains leaves the field unset.
func (p *PodWrapper) SpreadConstraint(maxSkew int32, topologyKey string, when v1.UnsatisfiableConstraintAction, key, value string, minDomains *int32) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew:           maxSkew,
		TopologyKey:       topologyKey,
		WhenUnsatisfiable: when,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
		MinDomains:        minDomains,
	})
	return p
}

// Owner sets the pod's controller owner reference.
func (p *PodWrapper) Owner(apiVersion, kind, name string) *PodWrapper {
	controller := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(name), Controller: &controller}}
	return p
}

// NodeWrapper builds a node.
type NodeWrapper struct{ v1.Node }

// MakeNode returns a node with the given name, labelled with
// kubernetes.io/hostname as a kubelet labels it.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID(name), Labels: map[string]string{v1.LabelHostname: name},
	}}}
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper { n.Labels[k] = v; return n }

// Allocatable sets the allocatable resources ("cpu": "4", "pods": "110").
func (n *NodeWrapper) Allocatable(rl map[v1.ResourceName]string) *NodeWrapper {
	n.Status.Allocatable = resourceList(rl)
	n.Status.Capacity = resourceList(rl)
	return n
}

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// Image records an image of sizeBytes on the node under the given names.
func (n *NodeWrapper) Image(sizeBytes int64, names ...string) *NodeWrapper {
	n.Status.Images = append(n.Status.Images, v1.ContainerImage{Names: names, SizeBytes: sizeBytes})
	return n
}

func resourceList(in map[v1.ResourceName]string) v1.ResourceList {
	if len(in) == 0 {
		return nil
	}
	out := v1.ResourceList{}
	for name, q := range in {
		out[name] = resource.MustParse(q)
	}
	return out
}
