package lab

import (
	"reflect"
	"testing"

	"github.com/klab-dev/klab/cluster/etcd"
)

func TestAlarmsOfNamesTheRaisingMember(t *testing.T) {
	members := []MemberInfo{{Name: "master-1", ID: "8e9e05c52164694d"}, {Name: "master-2", ID: "91bc3c398fb3c146"}}
	s := etcd.Status{Alarms: []string{"NOSPACE", "NOSPACE"}, AlarmMembers: []string{"91bc3c398fb3c146", "ffff"}}
	got := alarmsOf(s, members)
	want := []AlarmStatus{
		{Alarm: "NOSPACE", Member: "master-2", MemberID: "91bc3c398fb3c146"},
		// A member no longer in cluster.json keeps its ID.
		{Alarm: "NOSPACE", Member: "ffff", MemberID: "ffff"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("alarmsOf = %+v, want %+v", got, want)
	}
	if got := alarmsOf(etcd.Status{}, members); got != nil {
		t.Errorf("no alarms: %+v", got)
	}
}
