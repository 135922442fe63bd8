package etcd

import (
	"bytes"
	"io"
	"os"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// TestConcurrentIncomingSnapshotsSameIndex: two snapshots for the same
// index received at once (a leader's transfer still in flight when a new
// leader, at the same applied index, sends its own; each POST is served on
// its own goroutine) must each be stored whole. They shared one
// "<index>.db.part" file: the second truncated and renamed it while the
// first was still writing, so the first failed its rename and the file
// raft installs from ended up with the second's head and the first's tail.
func TestConcurrentIncomingSnapshotsSameIndex(t *testing.T) {
	m := &Member{cfg: Config{DataDir: t.TempDir(), NoFsync: true}}
	index := uint64(42)
	msg := &raftpb.Message{Snapshot: &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: &index}}}

	first := bytes.Repeat([]byte("A"), 256<<10)
	second := bytes.Repeat([]byte("B"), 128<<10)
	half := &pausingReader{data: first, pauseAt: len(first) / 2, reached: make(chan struct{}), release: make(chan struct{})}
	errc := make(chan error, 1)
	go func() { errc <- m.saveIncomingSnapshot(msg, half) }()
	<-half.reached // the first receive has written half its payload
	if err := m.saveIncomingSnapshot(msg, bytes.NewReader(second)); err != nil {
		t.Fatalf("second receive: %v", err)
	}
	close(half.release)
	if err := <-errc; err != nil {
		t.Errorf("first receive failed once the second had finished: %v", err)
	}
	got, err := os.ReadFile(m.incomingSnapPath(index))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, first) && !bytes.Equal(got, second) {
		t.Errorf("the stored snapshot is neither payload whole: %d bytes, %d A and %d B", len(got), bytes.Count(got, []byte("A")), bytes.Count(got, []byte("B")))
	}
	left, _ := os.ReadDir(m.snapDir())
	for _, e := range left {
		if e.Name() != "42.db" {
			t.Errorf("left behind in the snapshot dir: %s", e.Name())
		}
	}
}

// pausingReader hands out data, stopping at pauseAt until released.
type pausingReader struct {
	data     []byte
	off      int
	pauseAt  int
	reached  chan struct{}
	release  chan struct{}
	signaled bool
}

func (r *pausingReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	if r.off >= r.pauseAt && !r.signaled {
		r.signaled = true
		close(r.reached)
		<-r.release
	}
	end := len(r.data)
	if r.off < r.pauseAt {
		end = r.pauseAt
	}
	n := copy(p, r.data[r.off:end])
	r.off += n
	return n, nil
}
