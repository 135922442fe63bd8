package app

import (
	"net"
	"strings"
)

// identity is who the app is, as GET / reports it.
type identity struct {
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	Node      string `json:"node"`
	PodIP     string `json:"podIP"`
	Image     string `json:"image"`
	Version   string `json:"version"`
}

// envMap turns a KEY=VALUE list into a map; a repeated key keeps its last
// value, as a container's env list does. Entries without "=" are ignored.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// identityFrom reads the identity from the environment, falling back to
// HOSTNAME for the pod name and to the listen address for the pod IP, which
// is what a container has when nobody passed the Downward API fields.
func identityFrom(env map[string]string, listenHost string) identity {
	id := identity{
		Pod:       env[EnvPodName],
		Namespace: env[EnvPodNamespace],
		Node:      env[EnvNodeName],
		PodIP:     env[EnvPodIP],
		Image:     env[EnvImage],
	}
	if id.Pod == "" {
		id.Pod = env[EnvHostname]
	}
	if ip := net.ParseIP(listenHost); id.PodIP == "" && ip != nil && !ip.IsUnspecified() {
		id.PodIP = listenHost
	}
	id.Version = imageTag(id.Image)
	return id
}

// imageTag returns an image reference's tag: "v2" for "klab/app:v2",
// "latest" when it names none (as docker assumes), and "" for no image. A
// colon before the last slash belongs to a registry's port, not a tag.
func imageTag(image string) string {
	if image == "" {
		return ""
	}
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(name, ":"); ok && tag != "" {
		return tag
	}
	return "latest"
}
