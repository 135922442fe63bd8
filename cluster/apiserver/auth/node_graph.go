package auth

import (
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// VertexKind is the kind of object a pod refers to in the [NodeGraph], as
// upstream's graph names its vertex types.
type VertexKind string

// The kinds of object the Node authorizer decides by relationship.
const (
	SecretVertex         VertexKind = "secret"
	ConfigMapVertex      VertexKind = "configmap"
	PVCVertex            VertexKind = "pvc"
	ServiceAccountVertex VertexKind = "serviceAccount"
	ResourceClaimVertex  VertexKind = "resourceclaim"
)

// PodReference is an object a pod refers to.
type PodReference struct {
	Kind            VertexKind
	Namespace, Name string
}

// graphPod is what the graph holds of one pod: its node and the objects
// it refers to.
type graphPod struct {
	node     string
	refs     []PodReference
	revision int64
}

// NodeGraph is the Node authorizer's picture of which node needs which
// object: each pod bound to a node (spec.nodeName set) links the node to
// the secrets, configmaps, persistent volume claims, resource claims and
// service account the pod refers to, as upstream's graph of pod → node
// edges does (plugin/pkg/auth/authorizer/node/graph.go). A pod not yet
// bound links nothing; a deleted pod takes its links with it.
//
// The API server feeds it from its own watch of pods ([NodeGraph.SetPod],
// [NodeGraph.DeletePod], [NodeGraph.ReplacePods]). Unlike upstream's
// graph, which keeps a vertex per object and walks edges, this one keeps,
// for each object, the pods on each node that refer to it: klab has no
// PersistentVolumes or VolumeAttachments, so every path is one pod long.
type NodeGraph struct {
	mu   sync.RWMutex
	pods map[string]*graphPod // namespace/name
	// users holds, by object, by node, the pods (namespace/name) that
	// link them.
	users map[PodReference]map[string]map[string]bool
	// gone records the revision of deleted pods, so that a watch event
	// older than the deletion does not bring a pod back.
	gone map[string]int64
}

// NewNodeGraph returns an empty graph.
func NewNodeGraph() *NodeGraph {
	return &NodeGraph{pods: map[string]*graphPod{}, users: map[PodReference]map[string]map[string]bool{}, gone: map[string]int64{}}
}

func podKey(namespace, name string) string { return namespace + "/" + name }

func revisionOf(rv string) int64 {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// SetPod adds or replaces a pod. A pod without a node is removed (it
// relates to no node yet). A pod older (by resourceVersion) than what the
// graph has seen of it is ignored.
func (g *NodeGraph) SetPod(pod *corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setPod(pod)
}

func (g *NodeGraph) setPod(pod *corev1.Pod) {
	key := podKey(pod.Namespace, pod.Name)
	rev := revisionOf(pod.ResourceVersion)
	if old, ok := g.pods[key]; ok && rev != 0 && rev < old.revision {
		return
	}
	if rev != 0 && rev < g.gone[key] {
		return
	}
	g.removePod(key)
	delete(g.gone, key)
	if pod.Spec.NodeName == "" {
		return
	}
	p := &graphPod{node: pod.Spec.NodeName, refs: PodReferences(pod), revision: rev}
	g.pods[key] = p
	for _, v := range p.refs {
		byNode := g.users[v]
		if byNode == nil {
			byNode = map[string]map[string]bool{}
			g.users[v] = byNode
		}
		if byNode[p.node] == nil {
			byNode[p.node] = map[string]bool{}
		}
		byNode[p.node][key] = true
	}
}

// DeletePod removes a pod and its links.
func (g *NodeGraph) DeletePod(pod *corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := podKey(pod.Namespace, pod.Name)
	rev := revisionOf(pod.ResourceVersion)
	if old, ok := g.pods[key]; ok && rev != 0 && rev < old.revision {
		return
	}
	g.removePod(key)
	if rev != 0 {
		g.gone[key] = rev
	}
}

// ReplacePods sets every pod at once, as a relist does.
func (g *NodeGraph) ReplacePods(pods []*corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pods = map[string]*graphPod{}
	g.users = map[PodReference]map[string]map[string]bool{}
	g.gone = map[string]int64{}
	for _, p := range pods {
		g.setPod(p)
	}
}

func (g *NodeGraph) removePod(key string) {
	p, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	for _, v := range p.refs {
		byNode := g.users[v]
		delete(byNode[p.node], key)
		if len(byNode[p.node]) == 0 {
			delete(byNode, p.node)
		}
		if len(byNode) == 0 {
			delete(g.users, v)
		}
	}
}

// PathFrom reports whether node has a pod bound to it that refers to the
// object, and names one such pod (namespace/name).
func (g *NodeGraph) PathFrom(node string, kind VertexKind, namespace, name string) (string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	pods := g.users[PodReference{kind, namespace, name}][node]
	if len(pods) == 0 {
		return "", false
	}
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[0], true
}

// PodReferences returns the objects a pod refers to, as upstream's graph
// populator records them: its service account; the secrets of its image
// pull secrets, volumes and containers' environment (podutil's
// VisitPodSecretNames); the configmaps of its volumes and environment
// (VisitPodConfigmapNames); the claims of its persistentVolumeClaim and
// ephemeral volumes; and the resource claims its status names.
func PodReferences(pod *corev1.Pod) []PodReference {
	ns := pod.Namespace
	seen := map[PodReference]bool{}
	var refs []PodReference
	add := func(kind VertexKind, name string) {
		v := PodReference{kind, ns, name}
		if name != "" && !seen[v] {
			seen[v] = true
			refs = append(refs, v)
		}
	}
	add(ServiceAccountVertex, pod.Spec.ServiceAccountName)
	for _, s := range pod.Spec.ImagePullSecrets {
		add(SecretVertex, s.Name)
	}
	visitContainer := func(c *corev1.Container) {
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil {
				add(SecretVertex, from.SecretRef.Name)
			}
			if from.ConfigMapRef != nil {
				add(ConfigMapVertex, from.ConfigMapRef.Name)
			}
		}
		for _, env := range c.Env {
			if env.ValueFrom == nil {
				continue
			}
			if ref := env.ValueFrom.SecretKeyRef; ref != nil {
				add(SecretVertex, ref.Name)
			}
			if ref := env.ValueFrom.ConfigMapKeyRef; ref != nil {
				add(ConfigMapVertex, ref.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		visitContainer(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visitContainer(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		visitContainer(&c)
	}
	for _, v := range pod.Spec.Volumes {
		src := v.VolumeSource
		switch {
		case src.Secret != nil:
			add(SecretVertex, src.Secret.SecretName)
		case src.ConfigMap != nil:
			add(ConfigMapVertex, src.ConfigMap.Name)
		case src.Projected != nil:
			for _, p := range src.Projected.Sources {
				if p.Secret != nil {
					add(SecretVertex, p.Secret.Name)
				}
				if p.ConfigMap != nil {
					add(ConfigMapVertex, p.ConfigMap.Name)
				}
			}
		case src.PersistentVolumeClaim != nil:
			add(PVCVertex, src.PersistentVolumeClaim.ClaimName)
		case src.Ephemeral != nil:
			add(PVCVertex, pod.Name+"-"+v.Name)
		case src.CSI != nil && src.CSI.NodePublishSecretRef != nil:
			add(SecretVertex, src.CSI.NodePublishSecretRef.Name)
		case src.AzureFile != nil:
			add(SecretVertex, src.AzureFile.SecretName)
		case src.CephFS != nil && src.CephFS.SecretRef != nil:
			add(SecretVertex, src.CephFS.SecretRef.Name)
		case src.Cinder != nil && src.Cinder.SecretRef != nil:
			add(SecretVertex, src.Cinder.SecretRef.Name)
		case src.FlexVolume != nil && src.FlexVolume.SecretRef != nil:
			add(SecretVertex, src.FlexVolume.SecretRef.Name)
		case src.ISCSI != nil && src.ISCSI.SecretRef != nil:
			add(SecretVertex, src.ISCSI.SecretRef.Name)
		case src.RBD != nil && src.RBD.SecretRef != nil:
			add(SecretVertex, src.RBD.SecretRef.Name)
		case src.ScaleIO != nil && src.ScaleIO.SecretRef != nil:
			add(SecretVertex, src.ScaleIO.SecretRef.Name)
		case src.StorageOS != nil && src.StorageOS.SecretRef != nil:
			add(SecretVertex, src.StorageOS.SecretRef.Name)
		}
	}
	for _, st := range pod.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil {
			add(ResourceClaimVertex, *st.ResourceClaimName)
		}
	}
	return refs
}
