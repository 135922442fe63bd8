package kubelet

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
)

// logRequest is a /containerLogs query, as the API server forwards
// kubectl's pods/log options.
type logRequest struct {
	previous bool
	opts     cri.LogOptions
}

// parseLogQuery reads follow, previous, timestamps, tailLines,
// limitBytes, sinceSeconds and sinceTime, with the API's validation
// messages.
func parseLogQuery(q url.Values, now time.Time) (logRequest, error) {
	var req logRequest
	boolean := func(name string) (bool, error) {
		s := q.Get(name)
		if s == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false, fmt.Errorf("%s: invalid value %q: must be true or false", name, s)
		}
		return b, nil
	}
	integer := func(name string) (*int64, error) {
		s := q.Get(name)
		if s == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid value %q: must be an integer", name, s)
		}
		return &n, nil
	}
	var err error
	if req.opts.Follow, err = boolean("follow"); err != nil {
		return req, err
	}
	if req.previous, err = boolean("previous"); err != nil {
		return req, err
	}
	if req.opts.Timestamps, err = boolean("timestamps"); err != nil {
		return req, err
	}
	if req.opts.TailLines, err = integer("tailLines"); err != nil {
		return req, err
	}
	if req.opts.TailLines != nil && *req.opts.TailLines < 0 {
		return req, errors.New("tailLines: Invalid value: must be greater than or equal to 0")
	}
	if req.opts.LimitBytes, err = integer("limitBytes"); err != nil {
		return req, err
	}
	if req.opts.LimitBytes != nil && *req.opts.LimitBytes < 1 {
		return req, errors.New("limitBytes: Invalid value: must be greater than 0")
	}
	sinceSeconds, err := integer("sinceSeconds")
	if err != nil {
		return req, err
	}
	sinceTime := q.Get("sinceTime")
	if sinceSeconds != nil && sinceTime != "" {
		return req, errors.New("at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	if sinceSeconds != nil {
		if *sinceSeconds < 1 {
			return req, errors.New("sinceSeconds: Invalid value: must be greater than 0")
		}
		t := now.Add(-time.Duration(*sinceSeconds) * time.Second)
		req.opts.SinceTime = &t
	}
	if sinceTime != "" {
		t, err := time.Parse(time.RFC3339, sinceTime)
		if err != nil {
			return req, fmt.Errorf("sinceTime: invalid value %q: must be an RFC3339 time", sinceTime)
		}
		req.opts.SinceTime = &t
	}
	return req, nil
}

// serveContainerLogs is GET /containerLogs/{namespace}/{pod}/{container}.
func (k *Kubelet) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	namespace, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	req, err := parseLogQuery(r.URL.Query(), k.clock.Now())
	if err != nil {
		writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	pod := k.podByName(namespace, podName)
	if pod == nil {
		writeStatusError(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("pod %q does not exist", podName))
		return
	}
	if !hasContainer(pod, container) {
		writeStatusError(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("container %q not found in pod %q", container, podName))
		return
	}
	id, err := logContainerID(k.statuses.base(pod), container, req.previous)
	if err != nil {
		writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	id = strings.TrimPrefix(id, k.runtime.Name()+"://")
	if _, err := k.runtime.ContainerStatus(r.Context(), id); err != nil {
		writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("container %q in pod %q is not available: %v", container, podName, err))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	out := io.Writer(w)
	if f, ok := w.(http.Flusher); ok && req.opts.Follow {
		out = flushWriter{w: w, f: f}
	}
	if err := k.runtime.ContainerLogs(r.Context(), id, req.opts, out); err != nil && r.Context().Err() == nil {
		k.log.Warn("container logs", "pod", namespace+"/"+podName, "container", container, "err", err)
	}
}

// podByName finds a pod of this node by namespace and name.
func (k *Kubelet) podByName(namespace, name string) *v1.Pod {
	if k.podInformer == nil {
		return nil
	}
	obj, ok, err := k.podInformer.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	return obj.(*v1.Pod)
}

func hasContainer(pod *v1.Pod, name string) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// logContainerID picks the container whose log to read from the pod's
// status, with upstream's messages (validateContainerLogStatus): the
// running one, else the last terminated one; with previous, the one
// before.
func logContainerID(pod *v1.Pod, container string, previous bool) (string, error) {
	var cs *v1.ContainerStatus
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				cs = &list[i]
			}
		}
	}
	if cs == nil {
		return "", fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	}
	last := cs.LastTerminationState.Terminated
	state := cs.State
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return last.ContainerID, nil
	case state.Running != nil:
		return cs.ContainerID, nil
	case state.Terminated != nil:
		if state.Terminated.ContainerID != "" {
			return state.Terminated.ContainerID, nil
		}
		if last != nil && last.ContainerID != "" {
			return last.ContainerID, nil
		}
		return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
	case last != nil:
		if last.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
		return last.ContainerID, nil
	case state.Waiting != nil:
		switch state.Waiting.Reason {
		case reasonErrImagePull:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod.Name)
		case reasonImagePullBackOff:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod.Name)
		default:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: %v", container, pod.Name, state.Waiting.Reason)
		}
	}
	return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
}

// flushWriter sends each write to the client at once, for follow.
type flushWriter struct {
	w io.Writer
	f http.Flusher
}

func (fw flushWriter) Write(p []byte) (int, error) {
	n, err := fw.w.Write(p)
	fw.f.Flush()
	return n, err
}
