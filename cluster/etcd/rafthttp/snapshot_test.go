package rafthttp

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/klab-dev/klab/cluster/etcd/fault"
)

// trackedPayload is a snapshot payload that records being closed.
type trackedPayload struct {
	io.Reader
	closed *atomic.Bool
}

func (p trackedPayload) Close() error {
	p.closed.Store(true)
	return nil
}

func msgSnap(from, to, index uint64) *raftpb.Message {
	return &raftpb.Message{
		Type: raftpb.MessageType_MsgSnap.Enum(),
		From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(2),
		Snapshot: &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{
			Index: proto.Uint64(index), Term: proto.Uint64(2),
			ConfState: &raftpb.ConfState{Voters: []uint64{1, 2}},
		}},
	}
}

func TestSnapshotTransfer(t *testing.T) {
	payload := make([]byte, 5<<20+17)
	rand.Read(payload)

	tests := []struct {
		name       string
		sourceErr  error // returned by the sender's SnapshotSource
		receiveErr error // returned by the receiver's ReceiveSnapshot
		cut        bool
		want       raft.SnapshotStatus
	}{
		{name: "delivered", want: raft.SnapshotFinish},
		{name: "receiver fails", receiveErr: errTest, want: raft.SnapshotFailure},
		{name: "source fails", sourceErr: errTest, want: raft.SnapshotFailure},
		{name: "link cut", cut: true, want: raft.SnapshotFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var closed atomic.Bool
			source := func(m *raftpb.Message) (io.ReadCloser, error) {
				if tt.sourceErr != nil {
					return nil, tt.sourceErr
				}
				// The member sends its current state: it rewrites the index.
				m.Snapshot.Metadata.Index = proto.Uint64(42)
				return trackedPayload{Reader: bytes.NewReader(payload), closed: &closed}, nil
			}
			faults := fault.NewTable()
			if tt.cut {
				faults.Isolate("etcd-1", []string{"etcd-2"})
			}
			a := newNode(t, 1, nodeOptions{snapshots: source, faults: faults})
			b := newNode(t, 2, nodeOptions{})
			b.rec.snapErr = tt.receiveErr
			connect(a, b)

			a.tr.Send([]*raftpb.Message{msgSnap(1, 2, 10)})
			a.rec.await(t, 10*time.Second, "ReportSnapshot", func() bool { return len(a.rec.snapReports) == 1 })
			if got := a.rec.snapReports[0]; got != tt.want {
				t.Errorf("ReportSnapshot(%v), want %v", got, tt.want)
			}
			if tt.sourceErr == nil && !tt.cut && !closed.Load() {
				t.Error("the payload was not closed")
			}
			if tt.want == raft.SnapshotFailure {
				if n := len(b.rec.snaps); n != 0 {
					t.Errorf("receiver stored %d snapshots", n)
				}
				return
			}
			got := b.rec.snaps[0]
			if !bytes.Equal(got.payload, payload) {
				t.Errorf("payload of %d bytes arrived as %d different bytes", len(payload), len(got.payload))
			}
			if idx := got.m.GetSnapshot().GetMetadata().GetIndex(); idx != 42 {
				t.Errorf("snapshot index %d, want the source's rewritten 42", idx)
			}
		})
	}
}

func TestSnapshotToUnknownPeerFails(t *testing.T) {
	a := newNode(t, 1, nodeOptions{snapshots: func(*raftpb.Message) (io.ReadCloser, error) {
		return nil, errors.New("must not be opened")
	}})
	a.tr.Send([]*raftpb.Message{msgSnap(1, 9, 10)})
	a.rec.await(t, 5*time.Second, "ReportSnapshot", func() bool { return len(a.rec.snapReports) == 1 })
	if got := a.rec.snapReports[0]; got != raft.SnapshotFailure {
		t.Errorf("ReportSnapshot(%v), want failure", got)
	}
}
