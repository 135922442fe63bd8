package etcd

import (
	"fmt"
	"sort"
	"sync"

	bolt "go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// alarmBucket is etcd's backend bucket of active alarms: each key is an
// encoded AlarmMember, each value empty. It is part of the replicated
// state, so it travels in snapshots.
var alarmBucket = []byte("alarm")

// alarmKey names one active alarm: which member raised it, and which.
type alarmKey struct {
	member uint64
	alarm  pb.AlarmType
}

// alarmSet is the cluster's active alarms, as every member applies them
// from the log: an alarm is cluster state, not one member's opinion, so a
// NOSPACE raised by any member caps writes on all of them. The set in
// memory mirrors alarmBucket; both change only when an Alarm request is
// applied (or a snapshot installed).
type alarmSet struct {
	mu     sync.Mutex
	active map[alarmKey]bool
}

func newAlarmSet() *alarmSet { return &alarmSet{active: map[alarmKey]bool{}} }

// load replaces the set with what tx holds, creating the bucket if tx is
// writable and it is missing.
func (a *alarmSet) load(tx *bolt.Tx) error {
	active := map[alarmKey]bool{}
	b := tx.Bucket(alarmBucket)
	if b == nil && tx.Writable() {
		var err error
		if b, err = tx.CreateBucket(alarmBucket); err != nil {
			return fmt.Errorf("create alarm bucket: %w", err)
		}
	}
	if b != nil {
		err := b.ForEach(func(k, _ []byte) error {
			am := &pb.AlarmMember{}
			if err := proto.Unmarshal(k, am); err != nil {
				return fmt.Errorf("decode alarm %x: %w", k, err)
			}
			active[alarmKey{am.MemberID, am.Alarm}] = true
			return nil
		})
		if err != nil {
			return err
		}
	}
	a.mu.Lock()
	a.active = active
	a.mu.Unlock()
	return nil
}

// has reports whether any member has an alarm of type t active.
func (a *alarmSet) has(t pb.AlarmType) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.active {
		if k.alarm == t {
			return true
		}
	}
	return false
}

// list returns the active alarms of type t (all of them for NONE), in a
// fixed order.
func (a *alarmSet) list(t pb.AlarmType) []*pb.AlarmMember {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*pb.AlarmMember
	for k := range a.active {
		if t == pb.AlarmType_NONE || k.alarm == t {
			out = append(out, &pb.AlarmMember{MemberID: k.member, Alarm: k.alarm})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Alarm != out[j].Alarm {
			return out[i].Alarm < out[j].Alarm
		}
		return out[i].MemberID < out[j].MemberID
	})
	return out
}

// set activates or deactivates one alarm inside tx, and reports whether
// that changed anything.
func (a *alarmSet) set(tx *bolt.Tx, k alarmKey, on bool) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.active[k] == on {
		return false, nil
	}
	b, err := tx.CreateBucketIfNotExists(alarmBucket)
	if err != nil {
		return false, err
	}
	// Deterministic encoding: every member writes the same key.
	key, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pb.AlarmMember{MemberID: k.member, Alarm: k.alarm})
	if err != nil {
		return false, err
	}
	if on {
		err = b.Put(key, []byte{})
	} else {
		err = b.Delete(key)
	}
	if err != nil {
		return false, err
	}
	if on {
		a.active[k] = true
	} else {
		delete(a.active, k)
	}
	return true, nil
}

// applyAlarm applies an Alarm request, as etcd does: GET lists, ACTIVATE
// and DEACTIVATE answer with the alarm they touched (nothing if there was
// nothing to do).
func (m *Member) applyAlarm(tx *bolt.Tx, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	resp := &pb.AlarmResponse{Header: &pb.ResponseHeader{}}
	m.fillHeader(resp.Header)
	k := alarmKey{r.GetMemberID(), r.GetAlarm()}
	switch r.GetAction() {
	case pb.AlarmRequest_GET:
		resp.Alarms = m.alarms.list(r.GetAlarm())
	case pb.AlarmRequest_ACTIVATE, pb.AlarmRequest_DEACTIVATE:
		if k.alarm == pb.AlarmType_NONE {
			break
		}
		on := r.GetAction() == pb.AlarmRequest_ACTIVATE
		changed, err := m.alarms.set(tx, k, on)
		if err != nil {
			return nil, err
		}
		if on || changed {
			resp.Alarms = []*pb.AlarmMember{{MemberID: k.member, Alarm: k.alarm}}
		}
		if changed {
			verb := "disarmed"
			if on {
				verb = "raised"
				m.lg.Warn("alarm raised", "alarm", k.alarm.String(), "member", hexID(k.member))
			}
			m.events.Publish(Event{Member: m.cfg.Name, Kind: EventAlarm, Term: m.term.Load(),
				Detail: fmt.Sprintf("alarm %s %s for member %s", k.alarm, verb, hexID(k.member))})
		}
	}
	return resp, nil
}

// alarmStrings are the active alarms as etcd's Status lists them in its
// errors ("memberID:… alarm:NOSPACE").
func (m *Member) alarmStrings() []string {
	var out []string
	for _, a := range m.alarms.list(pb.AlarmType_NONE) {
		out = append(out, fmt.Sprintf("memberID:%d alarm:%s", a.MemberID, a.Alarm))
	}
	return out
}
