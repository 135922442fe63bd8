package record

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// election is the stream of an election in term 3: master-1 asks for
// pre-votes and votes and becomes leader, one second into the session.
func election(start time.Time) []lab.Observation {
	var out []lab.Observation
	seq := uint64(0)
	at := start
	hdr := func(m string, d time.Duration) lab.Observed {
		seq++
		at = at.Add(d)
		return lab.Observed{Seq: seq, Member: m, At: at}
	}
	status := func(i int, state string, term uint64, leader int, d time.Duration) {
		s := etcd.Status{ID: fmt.Sprintf("%x", 0x1000+i), Name: fmt.Sprintf("master-%d", i), State: state,
			Term: term, Leader: fmt.Sprintf("%x", 0x1000+leader), ElectionTicks: 10, HeartbeatTicks: 1,
			Commit: 10, Applied: 10, LastIndex: 10, FirstIndex: 1}
		out = append(out, &lab.StatusObservation{Observed: hdr(s.Name, d), Status: s})
	}
	msg := func(typ string, from, to int, term uint64, d time.Duration) {
		h := hdr(fmt.Sprintf("master-%d", from), d)
		out = append(out, &lab.EventObservation{Observed: h, Event: etcd.Event{Member: h.Member, Time: h.At,
			Kind: etcd.EventSend, Msg: &etcd.MessageInfo{Type: typ, FromName: fmt.Sprintf("master-%d", from),
				ToName: fmt.Sprintf("master-%d", to), Term: term, Index: 10}}})
	}
	for i := 1; i <= 3; i++ {
		status(i, "StateFollower", 2, 2, 100*time.Millisecond)
	}
	status(2, "StateFollower", 2, 0, 500*time.Millisecond)
	msg("MsgPreVote", 1, 3, 3, 200*time.Millisecond)
	msg("MsgPreVoteResp", 3, 1, 3, 10*time.Millisecond)
	msg("MsgVote", 1, 3, 3, 10*time.Millisecond)
	msg("MsgVoteResp", 3, 1, 3, 10*time.Millisecond)
	status(1, "StateLeader", 3, 1, 10*time.Millisecond)
	status(3, "StateFollower", 3, 1, 10*time.Millisecond)
	return out
}

// TestRecordedElectionScrubbedBack records an election, reads the
// recording back as klab replay does, and draws it before and after the
// votes: the messages and roles are those of each moment.
func TestRecordedElectionScrubbedBack(t *testing.T) {
	c := uitest.Setup(t, "en")
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	info := uitest.Info("rec", 3)
	var buf bytes.Buffer
	r := New(nopCloser{&buf}, info, start)
	obs := election(start)
	if err := r.Record(obs[:3]); err != nil {
		t.Fatal(err)
	}
	if err := r.Record(obs[3:]); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != r.Bytes() {
		t.Errorf("Bytes() = %d, wrote %d", r.Bytes(), buf.Len())
	}
	sessions, err := Read(&buf, "events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || len(sessions[0].Observations) != len(obs) {
		t.Fatalf("read %d sessions, want 1 of %d observations", len(sessions), len(obs))
	}
	s := sessions[0]
	before, err := Frame(c, s, ViewRaft, 400*time.Millisecond, 120, 40)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Frame(c, s, ViewRaft, s.Duration(), 120, 40)
	if err != nil {
		t.Fatal(err)
	}
	uitest.Golden(t, "election-before", before)
	uitest.Golden(t, "election-after", after)
	for _, want := range []string{"MsgPreVote t3", "MsgVote t3", "★ leader master-1, term 3"} {
		if !strings.Contains(after, want) {
			t.Errorf("after the election the frame lacks %q:\n%s", want, after)
		}
		if strings.Contains(before, want) {
			t.Errorf("before the election the frame already shows %q:\n%s", want, before)
		}
	}
	if got := s.StateAt(s.Duration()).Leader(); got == nil || got.Name != "master-1" {
		t.Errorf("leader at the end = %v, want master-1", got)
	}
}

func TestReadRejectsBadLines(t *testing.T) {
	for _, in := range []string{"", `{"t":1,"k":"s","n":1,"m":"a","s":{}}`, "{\"klab\":\"recording\",\"v\":1,\"info\":{}}\nnot json"} {
		if _, err := Read(strings.NewReader(in), "f.jsonl"); err == nil || !strings.Contains(err.Error(), "f.jsonl") {
			t.Errorf("Read(%q) = %v, want an error naming the file", in, err)
		}
	}
}

// TestRecordingIsGzipBatches: each batch is a whole gzip member appended
// to the file, so a recording cut short by a crash in the middle of its
// last batch still reads, up to the last whole line; it is several times
// smaller than its lines; and the plain JSON lines of an older recording
// still read.
func TestRecordingIsGzipBatches(t *testing.T) {
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	info := uitest.Info("rec", 3)
	var buf bytes.Buffer
	r := New(nopCloser{&buf}, info, start)
	obs := election(start)
	var members []int // where each batch's member ends
	members = append(members, buf.Len())
	for i := range obs {
		if err := r.Record(obs[i : i+1]); err != nil {
			t.Fatal(err)
		}
		members = append(members, buf.Len())
	}
	file := buf.Bytes()
	plain, err := io.ReadAll(mustGzip(t, file))
	if err != nil {
		t.Fatalf("the recording is not a gzip stream: %v", err)
	}
	if lines := bytes.Count(plain, []byte("\n")); lines != 2*len(obs)+1 {
		t.Errorf("%d lines, want the header and %d observations, each after its batch's line", lines, len(obs))
	}
	if len(file) >= len(plain) {
		t.Errorf("gzipped recording %d B is no smaller than its %d B of lines", len(file), len(plain))
	}
	// Every batch is its own member: the file cut at a batch's end is a
	// whole gzip stream.
	for i, end := range members {
		zr := mustGzip(t, file[:end])
		if _, err := io.ReadAll(zr); err != nil {
			t.Errorf("the recording cut after batch %d does not read as gzip: %v", i, err)
		}
	}
	// A crash in the middle of the last batch's member.
	last := members[len(members)-2]
	cut := file[:last+(len(file)-last)/2]
	sessions, err := Read(bytes.NewReader(cut), "events.jsonl.gz")
	if err != nil {
		t.Fatalf("a recording cut in its last batch: %v", err)
	}
	if got := len(sessions[0].Observations); got != len(obs)-1 {
		t.Errorf("cut recording: %d observations, want %d (all but the cut batch)", got, len(obs)-1)
	}
	// An older recording: plain JSON lines.
	sessions, err = Read(bytes.NewReader(plain), "events.jsonl")
	if err != nil || len(sessions) != 1 || len(sessions[0].Observations) != len(obs) {
		t.Fatalf("plain JSON lines: %d sessions, %v", len(sessions), err)
	}
}

func mustGzip(t *testing.T, b []byte) *gzip.Reader {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}
