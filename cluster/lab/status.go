package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/cluster/timing"
)

// Member health, as klab status shows it.
const (
	HealthHealthy     = "healthy"
	HealthNoLeader    = "no-leader"
	HealthPaused      = "paused"
	HealthUnreachable = "unreachable"
)

// statusTimeout bounds one member's answer: a member that takes longer is as
// good as unreachable to someone watching the cluster.
const statusTimeout = time.Second

// ClusterStatus is the cluster as klab status shows it.
type ClusterStatus struct {
	Name    string `json:"name"`
	Runtime string `json:"runtime"`
	// Running says whether a `klab up` process answers on the control socket.
	Running       bool     `json:"running"`
	EtcdEndpoints []string `json:"etcdEndpoints"`
	// EtcdCredentials are the files to reach them with, as etcdctl's
	// --cacert, --cert and --key (etcdCACert, etcdClientCert,
	// etcdClientKey).
	EtcdCredentials
	// APIServer is the URL kubectl uses and Kubeconfig the admin
	// kubeconfig's path.
	APIServer  string `json:"apiServer,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Leader is the name of the member the others follow, if any.
	Leader  string         `json:"leader,omitempty"`
	Members []MemberStatus `json:"members"`
	// Alarms are the cluster's active etcd alarms (NOSPACE, CORRUPT), as
	// the leader has applied them, else any member that answers.
	Alarms []AlarmStatus `json:"alarms,omitempty"`
	// Speed divides Kubernetes' timings; Timings lists each one's lab value
	// beside its upstream default.
	Speed   float64      `json:"speed"`
	Timings []timing.Row `json:"timings"`
}

// Answering returns how many members answered.
func (s *ClusterStatus) Answering() int {
	n := 0
	for _, m := range s.Members {
		if m.Error == "" {
			n++
		}
	}
	return n
}

// MemberStatus is one member's view of raft, or why there is none.
type MemberStatus struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	// State is the member's role in lowercase ("leader", "follower",
	// "candidate", "pre-candidate"), or, when it does not answer, what the
	// runtime knows ("stopped", "killed", "paused", "exited") or
	// "unreachable".
	State string `json:"state"`
	// RaftState is the raft state as the member reports it ("StateLeader").
	RaftState string `json:"raftState,omitempty"`
	Term      uint64 `json:"term"`
	IsLeader  bool   `json:"isLeader"`
	// RaftIndex is the commit index and Applied the applied index, as
	// `etcdctl endpoint status` shows them.
	RaftIndex uint64 `json:"raftIndex"`
	Applied   uint64 `json:"applied"`
	ClientURL string `json:"clientURL"`
	PeerURL   string `json:"peerURL"`
	Health    string `json:"health"`
	Error     string `json:"error,omitempty"`
}

// AlarmStatus is one active etcd alarm: its type and the member that
// raised it, by name when it is one of the cluster's members.
type AlarmStatus struct {
	Alarm    string `json:"alarm"`
	Member   string `json:"member"`
	MemberID string `json:"memberID"`
}

// roleOf turns raft's state name into the word klab shows.
func roleOf(raftState string) string {
	switch raftState {
	case "StateLeader":
		return "leader"
	case "StateFollower":
		return "follower"
	case "StateCandidate":
		return "candidate"
	case "StatePreCandidate":
		return "pre-candidate"
	}
	return strings.ToLower(raftState)
}

// Status reads the named cluster's cluster.json and asks every member for
// its status over HTTP, so that it works from any process. When a `klab up`
// process answers, members that do not answer are shown in the state the
// runtime knows them in.
func Status(ctx context.Context, name string) (*ClusterStatus, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return nil, err
	}
	st := &ClusterStatus{Name: info.Name, Runtime: info.Runtime, EtcdEndpoints: info.EtcdEndpoints, EtcdCredentials: info.EtcdCredentials, APIServer: info.APIServer, Kubeconfig: info.Kubeconfig,
		Speed: info.Spec.Speed, Timings: timing.Speed(info.Spec.Speed).Table()}
	states := map[runtime.Ref]runtime.ComponentInfo{}
	if info.Runtime == RuntimeDocker {
		// A Docker cluster runs while its containers do.
		if c, err := attachInfo(ctx, info, slog.New(slog.DiscardHandler)); err == nil {
			if infos, err := c.rt.List(ctx); err == nil {
				for _, ci := range infos {
					states[ci.Ref] = ci
					st.Running = st.Running || ci.State == runtime.StateRunning
				}
			}
		}
	} else if c, err := Connect(ctx, name); err == nil {
		st.Running = true
		if cs, err := c.Status(ctx); err == nil {
			for _, ci := range cs.Components {
				states[ci.Ref] = ci
			}
		}
	}
	raw := fetchAll(ctx, info.Members)
	for i, m := range info.Members {
		ms := MemberStatus{Name: m.Name, ID: m.ID, ClientURL: m.ClientURL, PeerURL: m.PeerURL}
		if r := raw[i]; r.err != nil {
			ms.Error = r.err.Error()
			ms.State, ms.Health = HealthUnreachable, HealthUnreachable
			if ci, ok := states[m.Ref()]; ok && ci.State != runtime.StateRunning {
				ms.State = string(ci.State)
			}
		} else {
			s := r.status
			ms.RaftState, ms.State = s.State, roleOf(s.State)
			ms.Term, ms.RaftIndex, ms.Applied = s.Term, s.Commit, s.Applied
			ms.IsLeader = s.State == "StateLeader"
			switch {
			case s.State == "paused" || states[m.Ref()].State == runtime.StatePaused:
				ms.Health = HealthPaused
			case s.Leader == "" || s.Leader == "0":
				ms.Health = HealthNoLeader
			default:
				ms.Health = HealthHealthy
			}
		}
		st.Members = append(st.Members, ms)
	}
	if i, ok := leaderOf(raw); ok {
		st.Leader = info.Members[i].Name
		st.Alarms = alarmsOf(raw[i].status, info.Members)
	} else {
		for _, r := range raw {
			if r.err == nil {
				st.Alarms = alarmsOf(r.status, info.Members)
				break
			}
		}
	}
	return st, nil
}

// alarmsOf lists a member's view of the active alarms, naming the raising
// members.
func alarmsOf(s etcd.Status, members []MemberInfo) []AlarmStatus {
	var out []AlarmStatus
	for i, a := range s.Alarms {
		as := AlarmStatus{Alarm: a}
		if i < len(s.AlarmMembers) {
			as.MemberID, as.Member = s.AlarmMembers[i], s.AlarmMembers[i]
			for _, m := range members {
				if m.ID == as.MemberID {
					as.Member = m.Name
				}
			}
		}
		out = append(out, as)
	}
	return out
}

// memberAnswer is one member's answer to a status request.
type memberAnswer struct {
	status etcd.Status
	err    error
}

// fetchAll asks every member for its status at once.
func fetchAll(ctx context.Context, members []MemberInfo) []memberAnswer {
	out := make([]memberAnswer, len(members))
	eachMember(members, func(i int, m MemberInfo) {
		out[i].status, out[i].err = FetchStatus(ctx, m.HTTPClient(statusTimeout), m.DebugURL)
	})
	return out
}

// FetchStatus GETs a member's /debug/klab/status (debugURL is
// MemberInfo.DebugURL) through hc, waiting at most a second: a member that
// takes longer is as good as unreachable.
func FetchStatus(ctx context.Context, hc *http.Client, debugURL string) (etcd.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, debugURL+"/status", nil)
	if err != nil {
		return etcd.Status{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return etcd.Status{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return etcd.Status{}, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var s etcd.Status
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return etcd.Status{}, fmt.Errorf("GET %s: decode: %w", req.URL, err)
	}
	return s, nil
}

// leaderOf picks the member that reports itself leader. During a partition
// an isolated old leader may still believe it leads until it notices it has
// lost quorum, so when several do, the one with the highest term wins: raft
// guarantees at most one leader per term, and the newest is the real one.
func leaderOf(answers []memberAnswer) (int, bool) {
	best, found := -1, false
	for i, a := range answers {
		if a.err != nil || a.status.State != "StateLeader" {
			continue
		}
		if !found || a.status.Term > answers[best].status.Term {
			best, found = i, true
		}
	}
	return best, found
}
