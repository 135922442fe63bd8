package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/kubelet/labels"
)

// Upstream's streaming defaults: a session with no traffic for
// streamingConnectionIdleTimeout is closed (KubeletConfiguration's
// default is 4 h); the client must open its streams within
// streamCreationTimeout of the upgrade.
const (
	streamingConnectionIdleTimeout = 4 * time.Hour
	streamCreationTimeout          = remotecommandconsts.DefaultStreamCreationTimeout
	// portForwardDialTimeout bounds connecting to the pod's port.
	portForwardDialTimeout = 5 * time.Second
)

// streamingHandlers registers /exec, /attach and /portForward, the
// kubelet endpoints the API server proxies pods/exec, pods/attach and
// pods/portforward to. They speak SPDY (and the older WebSocket channel
// protocols) through the CRI streaming server's own packages; the API
// server translates kubectl's WebSocket v5 and tunnelled port-forward to
// SPDY, as upstream's does.
func (k *Kubelet) streamingHandlers(mux *http.ServeMux) {
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{container}", k.serveExec)
		mux.HandleFunc(m+" /exec/{namespace}/{pod}/{uid}/{container}", k.serveExec)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{container}", k.serveAttach)
		mux.HandleFunc(m+" /attach/{namespace}/{pod}/{uid}/{container}", k.serveAttach)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}", k.servePortForward)
		mux.HandleFunc(m+" /portForward/{namespace}/{pod}/{uid}", k.servePortForward)
	}
}

// podFullName is upstream's name_namespace, which the streaming server
// uses in its messages.
func podFullName(pod *v1.Pod) string { return pod.Name + "_" + pod.Namespace }

// streamTarget finds the pod of the request and, for exec and attach, the
// running container it names. It answers the request itself when it
// cannot, with upstream's texts: 404 "pod does not exist", and a 500
// `container not found ("x")` for a container that is not running, which
// kubectl prints after "unable to upgrade connection: ".
func (k *Kubelet) streamTarget(w http.ResponseWriter, r *http.Request, wantContainer bool) (*v1.Pod, string, bool) {
	pod := k.podByName(r.PathValue("namespace"), r.PathValue("pod"))
	if pod == nil || (r.PathValue("uid") != "" && string(pod.UID) != r.PathValue("uid")) {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return nil, "", false
	}
	if !wantContainer {
		return pod, "", true
	}
	name := r.PathValue("container")
	id, err := k.runningContainer(r.Context(), pod, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, "", false
	}
	return pod, id, true
}

// runningContainer returns the runtime ID of the pod's running container
// name, as upstream's findContainer looks among the running containers.
func (k *Kubelet) runningContainer(ctx context.Context, pod *v1.Pod, name string) (string, error) {
	list, err := k.runtime.ListContainers(ctx)
	if err != nil {
		return "", fmt.Errorf("list containers: %w", err)
	}
	for _, c := range list {
		if c.Labels[labels.PodUID] == string(pod.UID) && c.Name == name && c.State == cri.StateRunning {
			return c.ID, nil
		}
	}
	return "", fmt.Errorf("container not found (%q)", name)
}

// serveExec is /exec/{namespace}/{pod}/{container}?command=...&input=1.
func (k *Kubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := r.URL.Query()["command"]
	pod, id, ok := k.streamTarget(w, r, true)
	if !ok {
		return
	}
	remotecommand.ServeExec(w, r, &streamSession{k: k, containerID: id}, podFullName(pod), string(pod.UID),
		r.PathValue("container"), cmd, opts, streamingConnectionIdleTimeout, streamCreationTimeout,
		remotecommandconsts.SupportedStreamingProtocols)
}

// serveAttach is /attach/{namespace}/{pod}/{container}.
func (k *Kubelet) serveAttach(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, id, ok := k.streamTarget(w, r, true)
	if !ok {
		return
	}
	remotecommand.ServeAttach(w, r, &streamSession{k: k, containerID: id}, podFullName(pod), string(pod.UID),
		r.PathValue("container"), opts, streamingConnectionIdleTimeout, streamCreationTimeout,
		remotecommandconsts.SupportedStreamingProtocols)
}

// servePortForward is /portForward/{namespace}/{pod}.
func (k *Kubelet) servePortForward(w http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, _, ok := k.streamTarget(w, r, false)
	if !ok {
		return
	}
	ip := k.statuses.base(pod).Status.PodIP
	if ip == "" {
		http.Error(w, fmt.Sprintf("pod %s has no IP yet", pod.Name), http.StatusInternalServerError)
		return
	}
	portforward.ServePortForward(w, r, &streamSession{k: k, podIP: ip}, podFullName(pod), string(pod.UID), opts,
		streamingConnectionIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// streamSession is one exec, attach or port-forward request, resolved to
// its container or pod IP: the streaming server's Executor, Attacher and
// PortForwarder.
type streamSession struct {
	k           *Kubelet
	containerID string
	podIP       string
}

var (
	_ remotecommand.Executor    = (*streamSession)(nil)
	_ remotecommand.Attacher    = (*streamSession)(nil)
	_ portforward.PortForwarder = (*streamSession)(nil)
)

// criStreams adapts the streaming server's streams to the runtime's: nil
// stays nil (an io.WriteCloser holding a nil stream would not), and
// resize events are passed on until the client goes.
func criStreams(ctx context.Context, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) cri.Streams {
	s := cri.Streams{TTY: tty}
	if in != nil {
		s.Stdin = in
	}
	if out != nil {
		s.Stdout = out
	}
	if errOut != nil {
		s.Stderr = errOut
	}
	if tty && resize != nil {
		sizes := make(chan cri.TerminalSize, 1)
		go func() {
			defer close(sizes)
			for {
				select {
				case size, ok := <-resize:
					if !ok {
						return
					}
					select {
					case sizes <- cri.TerminalSize{Width: size.Width, Height: size.Height}:
					case <-ctx.Done():
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
		s.Resize = sizes
	}
	return s
}

// ExecInContainer runs the command; a non-zero exit becomes the
// ExitError the streaming server reports as NonZeroExitCode, which
// kubectl prints as "command terminated with exit code N".
func (s *streamSession) ExecInContainer(ctx context.Context, name, uid, container string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	code, err := s.k.runtime.ExecInContainer(ctx, s.containerID, cmd, criStreams(ctx, in, out, errOut, tty, resize))
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command %q exited with %d", cmd, code), Code: code}
	}
	return nil
}

// AttachContainer connects to the container's main process.
func (s *streamSession) AttachContainer(ctx context.Context, name, uid, container string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return s.k.runtime.AttachContainer(ctx, s.containerID, criStreams(ctx, in, out, errOut, tty, resize))
}

// PortForward connects to the port on the pod's IP and copies both ways
// until either side closes. Upstream's runtimes connect from inside the
// pod's network namespace; klab's kubelet reaches pod IPs directly, so a
// port a pod binds to its loopback only is out of reach.
func (s *streamSession) PortForward(ctx context.Context, name, uid string, port int32, stream io.ReadWriteCloser) error {
	if port <= 0 || port > 65535 {
		return fmt.Errorf("invalid port %d", port)
	}
	addr := net.JoinHostPort(s.podIP, strconv.Itoa(int(port)))
	d := net.Dialer{Timeout: portForwardDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// The streaming server writes this error and then resets the
		// streams. A dial on loopback fails in microseconds, before
		// kubectl has its data stream's reply, and the reset would then
		// reach kubectl as "Stream reset" instead of the reason. Wait
		// for the client's first bytes (it is then past stream
		// creation), for a second at most.
		started := make(chan struct{})
		go func() {
			var b [1]byte
			stream.Read(b[:])
			close(started)
		}()
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-started:
		case <-t.C:
		case <-ctx.Done():
		}
		return fmt.Errorf("failed to connect to %s: %w", addr, err)
	}
	defer conn.Close()
	go func() {
		io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.CloseWrite() // the client closed its side: pass the EOF on
		}
	}()
	// The pod's side ending ends the forwarded connection; the client's
	// ending only half-closes it, as a TCP proxy does.
	_, err = io.Copy(stream, conn)
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
