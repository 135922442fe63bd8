package etcd

// Status is what GET /debug/klab/status returns: one member's view of raft.
type Status struct {
	ID        string `json:"id"` // hex, as etcdctl prints member IDs
	Name      string `json:"name"`
	ClusterID string `json:"clusterID"`
	// State is the raft role: StateLeader, StateFollower, StateCandidate,
	// StatePreCandidate, or "stopped"/"paused" when the member is not running.
	State   string `json:"state"`
	Term    uint64 `json:"term"`
	Vote    string `json:"vote"`   // hex member ID, "0" for none
	Leader  string `json:"leader"` // hex member ID, "0" for none
	Commit  uint64 `json:"commit"`
	Applied uint64 `json:"applied"`
	// FirstIndex and LastIndex bound the log this member still holds.
	FirstIndex uint64 `json:"firstIndex"`
	LastIndex  uint64 `json:"lastIndex"`
	// SnapshotIndex is the index of the latest raft snapshot.
	SnapshotIndex   uint64 `json:"snapshotIndex"`
	Revision        int64  `json:"revision"`
	CompactRevision int64  `json:"compactRevision"`
	DBSize          int64  `json:"dbSize"`
	// Alarms are the cluster's active alarms as this member has applied
	// them, each as NOSPACE or CORRUPT (the etcd alarm type), with the
	// raising member in AlarmMembers at the same position.
	Alarms       []string `json:"alarms,omitempty"`
	AlarmMembers []string `json:"alarmMembers,omitempty"`
	// QuotaBackendBytes is the member's space quota (negative: none).
	QuotaBackendBytes int64 `json:"quotaBackendBytes"`
	// Progress is the leader's view of each follower (leader only).
	Progress map[string]Progress `json:"progress,omitempty"`
	Clock    ClockStatus         `json:"clock"`
	// ElectionElapsed is how many ticks have passed since this member last
	// heard from a leader (or, as leader, since its last heartbeat round);
	// the UI draws the election timer from it and RandomizedElectionTicks.
	ElectionElapsed         int    `json:"electionElapsed"`
	RandomizedElectionTicks int    `json:"randomizedElectionTicks"`
	ElectionTicks           int    `json:"electionTicks"`
	HeartbeatTicks          int    `json:"heartbeatTicks"`
	Fsync                   bool   `json:"fsync"`
	ClientURL               string `json:"clientURL"`
	PeerURL                 string `json:"peerURL"`
}

// Progress is the leader's replication state for one follower.
type Progress struct {
	Match        uint64 `json:"match"`
	Next         uint64 `json:"next"`
	State        string `json:"state"` // StateProbe, StateReplicate, StateSnapshot
	RecentActive bool   `json:"recentActive"`
	Paused       bool   `json:"paused"`
}

// ClockStatus describes the member's raft clock (GET/POST /debug/klab/clock).
type ClockStatus struct {
	TickIntervalMS float64 `json:"tickIntervalMs"`
	Paused         bool    `json:"paused"`
	Ticks          uint64  `json:"ticks"` // ticks since start
}
