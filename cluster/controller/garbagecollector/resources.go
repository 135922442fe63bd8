package garbagecollector

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resource is one kind of object the garbage collector watches.
type resource struct {
	schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// monitoredResources are the resources klab's API server serves that can
// be owners or dependents. Upstream discovers them (every resource that
// supports list, watch and delete); klab serves a fixed set, so the list is
// fixed too, and the manager need not talk to the API server to build the
// controller. Events are left out, as upstream's default ignored resources
// leave them out: they are many, short-lived and never owned.
var monitoredResources = []resource{
	{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, "Endpoints", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "Namespace", false},
	{schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "Node", false},
	{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "Pod", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "podtemplates"}, "PodTemplate", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}, "ReplicationController", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, "ServiceAccount", true},
	{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "Service", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"}, "ControllerRevision", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, "DaemonSet", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, "ReplicaSet", true},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "StatefulSet", true},
	{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, "CronJob", true},
	{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, "Job", true},
	{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, "Lease", true},
	{schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, "EndpointSlice", true},
}

// restMapper finds the resource of an owner reference's apiVersion and
// kind, as upstream's RESTMapper does for the garbage collector.
type restMapper map[schema.GroupKind]resource

func newRESTMapper(resources []resource) restMapper {
	m := restMapper{}
	for _, r := range resources {
		m[schema.GroupKind{Group: r.Group, Kind: r.Kind}] = r
	}
	return m
}

// restMappingError is returned for a kind klab does not serve. An owner of
// such a kind can never be found, but the reference is kept: upstream
// retries in case the resource appears, rather than delete dependents
// whose owner it cannot see.
type restMappingError struct {
	kind, version string
}

func (e *restMappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s", e.version, e.kind)
}

// resourceFor maps an apiVersion and kind to the served resource. The
// version need not be the served one: an owner reference names the object,
// whichever version it was written in.
func (m restMapper) resourceFor(apiVersion, kind string) (resource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return resource{}, fmt.Errorf("parse apiVersion %q: %w", apiVersion, err)
	}
	r, ok := m[schema.GroupKind{Group: gv.Group, Kind: kind}]
	if !ok {
		return resource{}, &restMappingError{kind: kind, version: apiVersion}
	}
	return r, nil
}
