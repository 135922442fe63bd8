package apiserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	streamproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// The connect subresources pods/exec, pods/attach and pods/portforward,
// served as upstream's ExecREST, AttachREST and PortForwardREST are: the
// API server checks the pod and the container, then proxies the upgraded
// connection to the kubelet of the pod's node (/exec, /attach,
// /portForward). kubectl speaks two protocols:
//   - SPDY (POST with Upgrade: SPDY/3.1), passed through as it is by
//     apimachinery's upgrade-aware proxy;
//   - WebSockets (GET): v5.channel.k8s.io for exec and attach, which
//     apiserver's StreamTranslatorHandler turns into a SPDY client of the
//     kubelet, and SPDY tunnelled in WebSocket frames for port-forward,
//     which its TunnelingHandler unwraps; the kubelet speaks SPDY only.

// serveConnect serves pods/exec, pods/attach and pods/portforward.
func (s *Server) serveConnect(w http.ResponseWriter, req *request) {
	// A GET that upgrades to a WebSocket reaches the pod as surely as a
	// POST does, so upstream (AuthorizePodWebsocketUpgradeCreatePermission)
	// asks for create too.
	if req.info.verb == "get" {
		if err := s.authorizeVerb(req, registry.VerbCreate); err != nil {
			writeError(w, req.Request, err)
			return
		}
	}
	obj, err := s.getObject(req.Context(), req.res, req.info.namespace, req.info.name)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	pod := obj.(*corev1.Pod)
	q := req.URL.Query()
	sub := req.info.subresource
	params := url.Values{}
	var path string
	switch sub {
	case registry.SubExec, registry.SubAttach:
		container, err := podContainer(pod, q.Get("container"))
		if err != nil {
			writeError(w, req.Request, err)
			return
		}
		if err := streamParams(params, q, sub == registry.SubExec); err != nil {
			writeError(w, req.Request, err)
			return
		}
		path = fmt.Sprintf("/%s/%s/%s/%s", sub, pod.Namespace, pod.Name, container)
	case registry.SubPortForward:
		for _, port := range q["ports"] {
			n, err := strconv.ParseUint(port, 10, 16)
			if err != nil || n == 0 {
				writeError(w, req.Request, apierrors.NewBadRequest(fmt.Sprintf("ports: Invalid value: %q: must be between 1 and 65535, inclusive", port)))
				return
			}
			params.Add("port", port)
		}
		path = fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name)
	}
	base, err := s.kubeletURL(req.Context(), pod)
	if err != nil {
		writeError(w, req.Request, err)
		return
	}
	location := base.JoinPath(path)
	location.RawQuery = params.Encode()

	upgrade := utilproxy.NewUpgradeAwareHandler(location, s.kubeletTransport, false, true, errorResponder{})
	var handler http.Handler = upgrade
	switch sub {
	case registry.SubExec, registry.SubAttach:
		translator := streamproxy.NewStreamTranslatorHandler(location, s.kubeletTransport, 0, streamproxy.Options{
			Stdin: params.Get(corev1.ExecStdinParam) == "1", Stdout: params.Get(corev1.ExecStdoutParam) == "1",
			Stderr: params.Get(corev1.ExecStderrParam) == "1", Tty: params.Get(corev1.ExecTTYParam) == "1",
		})
		handler = streamproxy.NewTranslatingHandler(upgrade, translator, wsstream.IsWebSocketRequestWithStreamCloseProtocol)
	case registry.SubPortForward:
		handler = streamproxy.NewTranslatingHandler(upgrade, streamproxy.NewTunnelingHandler(upgrade), wsstream.IsWebSocketRequestWithTunnelingProtocol)
	}
	handler.ServeHTTP(w, forwardedRequest(req.Request))
}

// streamParams turns the PodExecOptions or PodAttachOptions of kubectl's
// query (stdin=true&tty=true&command=ls) into the kubelet's
// (input=1&tty=1&command=ls), as upstream's streamParams does, with the
// API's validation.
func streamParams(params, q url.Values, exec bool) error {
	flags := []struct{ api, kubelet string }{
		{"stdin", corev1.ExecStdinParam}, {"stdout", corev1.ExecStdoutParam},
		{"stderr", corev1.ExecStderrParam}, {"tty", corev1.ExecTTYParam},
	}
	streams := false
	for _, f := range flags {
		v := q.Get(f.api)
		if v == "" {
			continue
		}
		on, err := strconv.ParseBool(v)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("%s: Invalid value: %q: must be true or false", f.api, v))
		}
		if on {
			params.Set(f.kubelet, "1")
			streams = streams || f.api != "tty"
		}
	}
	if !streams {
		return apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	if exec {
		if len(q["command"]) == 0 {
			return apierrors.NewBadRequest("command: Required value")
		}
		for _, c := range q["command"] {
			params.Add("command", c)
		}
	}
	return nil
}

// podContainer returns the container a request names, or the pod's only
// one, with upstream's messages.
func podContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, containerNames(pod.Spec.Containers))
		if len(pod.Spec.InitContainers) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", containerNames(pod.Spec.InitContainers))
		}
		return "", apierrors.NewBadRequest(msg)
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return name, nil
			}
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

func containerNames(list []corev1.Container) string {
	names := make([]string, len(list))
	for i, c := range list {
		names[i] = c.Name
	}
	return strings.Join(names, " ")
}

// kubeletURL is the https address of the kubelet of the pod's node, from
// the node's InternalIP and kubelet endpoint.
func (s *Server) kubeletURL(ctx context.Context, pod *corev1.Pod) (*url.URL, error) {
	if pod.Spec.NodeName == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	return s.nodeKubeletURL(ctx, pod.Spec.NodeName)
}

func (s *Server) nodeKubeletURL(ctx context.Context, nodeName string) (*url.URL, error) {
	nodesRes, _ := s.reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "nodes"})
	obj, err := s.store.Get(ctx, nodesRes, "", nodeName)
	if err != nil {
		return nil, err
	}
	node := obj.(*corev1.Node)
	host := ""
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			host = a.Address
		}
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if host == "" || port == 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("node %s has no kubelet endpoint in its status; is its kubelet running?", node.Name))
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(int(port)))}, nil
}

// forwardedRequest is the request as it goes on to a kubelet or pod:
// without the client's credentials, which upstream's authentication
// filter drops once it has used them.
func forwardedRequest(r *http.Request) *http.Request {
	out := r.Clone(r.Context())
	out.Header.Del("Authorization")
	return out
}

// errorResponder answers a request the proxy could not pass on (the
// backend did not answer) with a Status, as upstream's does.
type errorResponder struct{}

func (errorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, apierrors.NewServiceUnavailable(err.Error()))
}

// connectKinds are the option kinds discovery names the streaming
// subresources by, as upstream's.
var connectKinds = map[string]string{
	registry.SubExec:        "PodExecOptions",
	registry.SubAttach:      "PodAttachOptions",
	registry.SubPortForward: "PodPortForwardOptions",
}
