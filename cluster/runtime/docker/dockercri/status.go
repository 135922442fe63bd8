package dockercri

import (
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// Reason and exit code of a container the engine could not start, as
// containerd (and the in-process runtime) report it.
const (
	reasonStartError   = "StartError"
	exitCodeStartError = 128
	// exitCodeOOMKilled is 128 + SIGKILL, the code of a container the
	// kernel killed for its memory.
	exitCodeOOMKilled = 137
)

// encodeCRILabels is the value of labels.PodLabels: the labels the kubelet
// gave a sandbox or container (cri.SandboxConfig.Labels,
// cri.ContainerConfig.Labels), JSON-encoded, so that they come back exactly
// as given whatever they are. The pod's name, namespace and UID are also
// labels of their own, for `docker ps --filter`.
func encodeCRILabels(l map[string]string) string {
	if l == nil {
		l = map[string]string{}
	}
	b, _ := json.Marshal(l) // a map of strings always encodes
	return string(b)
}

// criLabels returns the labels the kubelet gave an object. An object
// whose label is missing or damaged (someone edited it by hand) gets its
// pod labels, which is what the kubelet finds its pods by.
func criLabels(l map[string]string) map[string]string {
	var out map[string]string
	if err := json.Unmarshal([]byte(l[labels.PodLabels]), &out); err == nil && out != nil {
		return out
	}
	out = map[string]string{}
	for _, k := range []string{labels.PodName, labels.PodNamespace, labels.PodUID, labels.ContainerName} {
		if v, ok := l[k]; ok {
			out[k] = v
		}
	}
	return out
}

// podLabels returns the labels naming a pod, copied from a sandbox's.
func podLabels(sandbox map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{labels.PodName, labels.PodNamespace, labels.PodUID} {
		out[k] = sandbox[k]
	}
	return out
}

// parseTime reads a time Docker reports; Docker's zero time
// ("0001-01-01T00:00:00Z") and anything unreadable are the zero time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.IsZero() {
		return time.Time{}
	}
	return t
}

// sortOldestFirst sorts containers by creation, as runtimes list them.
func sortOldestFirst(list []container.InspectResponse) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := parseTime(list[i].Created), parseTime(list[j].Created)
		if !a.Equal(b) {
			return a.Before(b)
		}
		return list[i].ID < list[j].ID
	})
}

// containerStatus reports a pod container from what inspecting it said.
// statusOf is containerStatus, with the engine's "oom" events standing in
// for a State.OOMKilled the engine has not set yet.
func (r *Runtime) statusOf(info container.InspectResponse) cri.ContainerStatus {
	st := containerStatus(info)
	if _, oom := r.oomKilled.Load(info.ID); oom && st.State == cri.StateExited && st.ExitCode == exitCodeOOMKilled {
		st.Reason = cri.ReasonOOMKilled
	}
	return st
}

func containerStatus(info container.InspectResponse) cri.ContainerStatus {
	l := info.Config.Labels
	attempt, _ := strconv.Atoi(l[labels.Attempt])
	st := info.State
	status := cri.ContainerStatus{
		ID:         info.ID,
		SandboxID:  l[labels.SandboxID],
		Name:       l[labels.ContainerName],
		Attempt:    attempt,
		Image:      info.Config.Image,
		ImageID:    info.Image,
		CreatedAt:  parseTime(info.Created),
		StartedAt:  parseTime(st.StartedAt),
		FinishedAt: parseTime(st.FinishedAt),
		Message:    st.Error,
		Labels:     criLabels(l),
	}
	if image := l[labels.Image]; image != "" {
		status.Image = image // a stand-in's: the image the pod asked for
	}
	switch st.Status {
	case "created":
		status.State = cri.StateCreated
		if st.Error != "" {
			// The engine could not start it; Docker leaves such a
			// container "created" with no finish time, where containerd
			// reports it exited. Its creation stands in for the finish,
			// which was a moment later, so that the kubelet's back-off
			// has a time to count from.
			status.State = cri.StateExited
			status.ExitCode, status.Reason = st.ExitCode, reasonStartError
			if status.ExitCode == 0 {
				status.ExitCode = exitCodeStartError
			}
			status.FinishedAt = status.CreatedAt
		}
	case "running", "paused", "restarting":
		status.State = cri.StateRunning
	case "exited", "dead":
		status.State = cri.StateExited
		// Docker notes the start once the process runs, which can be
		// after a quick process has already exited.
		if status.FinishedAt.Before(status.StartedAt) {
			status.StartedAt = status.FinishedAt
		}
		status.ExitCode = st.ExitCode
		switch {
		case st.OOMKilled:
			status.ExitCode, status.Reason = exitCodeOOMKilled, cri.ReasonOOMKilled
		case st.ExitCode == 0:
			status.Reason = cri.ReasonCompleted
		default:
			status.Reason = cri.ReasonError
		}
	default:
		status.State = cri.StateUnknown
	}
	return status
}

// sandboxStatus reports a sandbox from what inspecting its pause container
// said.
func sandboxStatus(info container.InspectResponse) cri.SandboxStatus {
	l := info.Config.Labels
	return cri.SandboxStatus{
		Sandbox: cri.Sandbox{ID: info.ID, IP: l[labels.IP]},
		Config: cri.SandboxConfig{
			PodUID:    l[labels.PodUID],
			Name:      l[labels.PodName],
			Namespace: l[labels.PodNamespace],
			Hostname:  info.Config.Hostname,
			Labels:    criLabels(l),
		},
		Ready:     info.State.Status == "running",
		CreatedAt: parseTime(info.Created),
	}
}
