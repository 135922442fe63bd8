package kubelet

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// masterService is the Service every pod gets variables for, whatever its
// namespace and enableServiceLinks say: the API server's own,
// default/kubernetes (upstream's masterServices).
const masterService = "kubernetes"

// newServiceInformer watches every Service of the cluster, as upstream's
// kubelet does to build the service environment variables.
func newServiceInformer(client kubernetes.Interface) cache.SharedIndexInformer {
	return informers.NewSharedInformerFactory(client, 0).Core().V1().Services().Informer()
}

// serviceEnv returns the variables a container of pod gets for the
// Services it can see (upstream's getServiceEnvVarMap): those of its own
// namespace when enableServiceLinks is true (the API's default, also when
// it is unset), and default/kubernetes always. Services without a cluster
// IP (headless, ExternalName) give none.
func (k *Kubelet) serviceEnv(pod *v1.Pod) (map[string]string, error) {
	if k.services == nil || !k.services.HasSynced() {
		return nil, fmt.Errorf("services have not yet been read at least once, cannot construct envvars")
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	seen := map[string]*v1.Service{}
	for _, obj := range k.services.GetStore().List() {
		svc, ok := obj.(*v1.Service)
		if !ok || !serviceIPSet(svc) {
			continue
		}
		switch {
		case svc.Namespace == metav1.NamespaceDefault && svc.Name == masterService:
			// A Service of the pod's own namespace with the same name
			// wins, as upstream: it is set over this one, and this one
			// does not replace it.
			if _, dup := seen[svc.Name]; !dup {
				seen[svc.Name] = svc
			}
		case svc.Namespace == pod.Namespace && links:
			seen[svc.Name] = svc
		}
	}
	list := make([]*v1.Service, 0, len(seen))
	for _, svc := range seen {
		list = append(list, svc)
	}
	env := map[string]string{}
	for _, kv := range serviceEnvVars(list) {
		env[kv.Name] = kv.Value
	}
	return env, nil
}

// serviceIPSet reports whether a Service has a cluster IP to put in the
// variables ("None" is a headless Service).
func serviceIPSet(svc *v1.Service) bool {
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != v1.ClusterIPNone
}

// serviceEnvVars returns the variables for the Services, in the shape of
// upstream's envvars.FromServices: per Service <NAME>_SERVICE_HOST, its
// first port as <NAME>_SERVICE_PORT and each named port as
// <NAME>_SERVICE_PORT_<PORT NAME>, then the Docker-link variables
// (<NAME>_PORT, and for each port <NAME>_PORT_<port>_<PROTO> with _PROTO,
// _PORT and _ADDR). Names are upper case with '-' as '_'.
func serviceEnvVars(services []*v1.Service) []v1.EnvVar {
	sort.Slice(services, func(i, j int) bool { return services[i].Name < services[j].Name })
	var out []v1.EnvVar
	for _, svc := range services {
		if !serviceIPSet(svc) || len(svc.Spec.Ports) == 0 {
			continue
		}
		prefix := envVarName(svc.Name)
		ip := svc.Spec.ClusterIP
		out = append(out,
			v1.EnvVar{Name: prefix + "_SERVICE_HOST", Value: ip},
			v1.EnvVar{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(svc.Spec.Ports[0].Port))})
		for _, p := range svc.Spec.Ports {
			if p.Name != "" {
				out = append(out, v1.EnvVar{Name: prefix + "_SERVICE_PORT_" + envVarName(p.Name), Value: strconv.Itoa(int(p.Port))})
			}
		}
		out = append(out, linkVars(prefix, ip, svc.Spec.Ports)...)
	}
	return out
}

// linkVars are the variables Docker's container links defined, which
// Kubernetes keeps for programs written against them. The first port also
// gets the bare <NAME>_PORT, as Docker gave it.
func linkVars(prefix, ip string, ports []v1.ServicePort) []v1.EnvVar {
	var out []v1.EnvVar
	for i, p := range ports {
		protocol := string(p.Protocol)
		if protocol == "" {
			protocol = string(v1.ProtocolTCP)
		}
		lower := strings.ToLower(protocol)
		url := lower + "://" + net.JoinHostPort(ip, strconv.Itoa(int(p.Port)))
		if i == 0 {
			out = append(out, v1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		portPrefix := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(protocol))
		out = append(out,
			v1.EnvVar{Name: portPrefix, Value: url},
			v1.EnvVar{Name: portPrefix + "_PROTO", Value: lower},
			v1.EnvVar{Name: portPrefix + "_PORT", Value: strconv.Itoa(int(p.Port))},
			v1.EnvVar{Name: portPrefix + "_ADDR", Value: ip})
	}
	return out
}

// envVarName turns a Service or port name into a variable name part.
func envVarName(name string) string {
	return strings.ReplaceAll(strings.ToUpper(name), "-", "_")
}
