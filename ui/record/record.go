// Package record writes what the workspace's views see to a recording (the
// state dir's events.jsonl.gz) and reads it back, so that every view (Raft,
// Overview, Scheduler, Proxy, Events) can be drawn as it was at any moment
// of a session, with or without the cluster.
//
// A recording is JSON lines, append-only, gzipped: each batch the
// workspace draws at once is one whole gzip member appended to the file, so
// that `zcat` reads it, a crash loses at most the batch being written, and
// a busy cluster's minute takes a few megabytes instead of twenty (the
// lines repeat their names and fields, and compress about tenfold). Read
// also takes the plain JSON lines of earlier recordings. Each session of a workspace
// begins with a header line naming the cluster and its members; every
// later line is one observation, its time given in microseconds after the
// header's start so that a line stays short:
//
//	{"klab":"recording","v":2,"start":"2026-…","info":{…}}
//	{"t":1250,"k":"e","n":17,"m":"master-1","e":{…}}
//	{"t":1300,"k":"s","n":18,"m":"master-2","s":{…}}
//	{"t":1320,"k":"v","w":"overview","d":[{"pod":{"ns":"default","name":"web-1",…}}]}
//	{"t":1400,"k":"c","d":[{"ref":{…},"state":"running"}]}
//
// k is "s" (a status), "e" (a raft event), "u" (the member stopped
// answering; err says why) or "g" (events were lost; lost says how many),
// the Observer's stream, each at the time it was observed; "b", the moment
// the workspace took the n observations that follow (a batch: what the
// views drew at once, later than each was observed); "v", a tape of view w's own sources (the
// Kubernetes feed's object adds, updates and deletes for the Overview, the
// kube-schedulers' decisions, the Services and kube-proxy rules, the Events
// and the API servers' requests; each view's Tape says what it keeps, only
// the fields it draws); or "c", the runtime's report of the components.
// Version 1 recordings, the Observer's stream alone, are read as well.
package record

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
)

// FileName is the recording's name in a cluster's state dir.
const FileName = "events.jsonl.gz"

// Version is the recording format's version: 2 added the views' tapes
// and the components' reports.
const Version = 2

// header is a session's first line.
type header struct {
	Klab  string    `json:"klab"`
	V     int       `json:"v"`
	Start time.Time `json:"start"`
	Info  *lab.Info `json:"info"`
}

// line is one observation, tape or report.
type line struct {
	T      int64           `json:"t"`
	K      string          `json:"k"`
	N      uint64          `json:"n,omitempty"`
	M      string          `json:"m,omitempty"`
	Status *etcd.Status    `json:"s,omitempty"`
	Event  *etcd.Event     `json:"e,omitempty"`
	Err    string          `json:"err,omitempty"`
	Lost   uint64          `json:"lost,omitempty"`
	W      string          `json:"w,omitempty"`
	D      json.RawMessage `json:"d,omitempty"`
}

// Line kinds of the views' sources.
const (
	kindBatch      = "b"
	kindTape       = "v"
	kindComponents = "c"
)

// Components is the name under which the runtime's reports of the
// components are kept among a session's tapes.
const Components = "components"

// Tape is one recorded message of a view's own sources (View names the
// view, or is Components), as the view's Tape encoded it.
type Tape struct {
	At   time.Time
	View string
	Data []byte
	// Line is where the tape was read, for errors.
	Line int
}

// Recorder appends observations to a recording. It is safe for use by
// several goroutines.
type Recorder struct {
	mu    sync.Mutex
	f     io.WriteCloser
	start time.Time
	line  bytes.Buffer // one line, encoded
	raw   bytes.Buffer // the batch's lines
	out   bytes.Buffer // the batch's gzip member
	gz    *gzip.Writer
	bytes int64
	err   error
}

// Open opens (or creates) the recording at path for appending and begins
// a session of the cluster info describes.
func Open(path string, info *lab.Info, start time.Time) (*Recorder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, i18n.Wrap(err, "record.err.open", path)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, i18n.Wrap(err, "record.err.open", path)
	}
	r := New(f, info, start)
	if err := r.Flush(); err != nil {
		f.Close()
		return nil, i18n.Wrap(err, "record.err.open", path)
	}
	return r, nil
}

// New begins a session of the cluster info describes on w.
func New(w io.WriteCloser, info *lab.Info, start time.Time) *Recorder {
	r := &Recorder{f: w, start: start}
	// Speed over size: the level that costs least CPU still takes a
	// busy minute to a few megabytes.
	r.gz, _ = gzip.NewWriterLevel(&r.out, gzip.BestSpeed)
	r.put(header{Klab: "recording", V: Version, Start: start.UTC(), Info: info})
	r.write()
	return r
}

// put adds one line to the batch.
func (r *Recorder) put(v any) {
	if r.err != nil {
		return
	}
	r.line.Reset()
	enc := json.NewEncoder(&r.line)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		r.err = err
		return
	}
	r.raw.Write(r.line.Bytes())
}

// write appends the batch to the file as one gzip member, in one write.
func (r *Recorder) write() {
	defer r.raw.Reset()
	if r.err != nil || r.raw.Len() == 0 {
		return
	}
	r.out.Reset()
	r.gz.Reset(&r.out)
	if _, err := r.gz.Write(r.raw.Bytes()); err != nil {
		r.err = err
		return
	}
	if err := r.gz.Close(); err != nil {
		r.err = err
		return
	}
	n, err := r.f.Write(r.out.Bytes())
	r.bytes += int64(n)
	r.err = err
}

// maxPending is how many bytes of tapes wait for the next batch of
// observations before they are written on their own.
const maxPending = 64 << 10

// RecordTape adds a tape of view's own sources (or the components' report,
// view Components) taken at at. It is written out with the next batch of
// observations, which come at least once a second, so that tapes do not
// cost a gzip member each; Close writes what is left.
func (r *Recorder) RecordTape(view string, at time.Time, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := kindTape
	if view == Components {
		k, view = kindComponents, ""
	}
	r.put(line{T: at.Sub(r.start).Microseconds(), K: k, W: view, D: data})
	if r.raw.Len() >= maxPending {
		r.write()
	}
	return r.err
}

// Record appends a batch of observations, taken when its last one was
// observed, and writes it out, with the tapes taken since the last batch:
// a batch is what the workspace draws at once, a few times a second at
// most.
func (r *Recorder) Record(batch []lab.Observation) error {
	if len(batch) == 0 {
		return r.RecordTaken(batch, r.start)
	}
	return r.RecordTaken(batch, batch[len(batch)-1].Header().At)
}

// RecordTaken is Record of a batch the workspace took at taken, which a
// frame of that moment draws: its observations may have been observed a
// little earlier.
func (r *Recorder) RecordTaken(batch []lab.Observation, taken time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(batch) > 0 {
		r.put(line{T: taken.Sub(r.start).Microseconds(), K: kindBatch, N: uint64(len(batch))})
	}
	for _, o := range batch {
		h := o.Header()
		l := line{T: h.At.Sub(r.start).Microseconds(), N: h.Seq, M: h.Member}
		switch o := o.(type) {
		case *lab.StatusObservation:
			l.K, l.Status = "s", &o.Status
		case *lab.EventObservation:
			l.K, l.Event = "e", &o.Event
		case *lab.UnreachableObservation:
			l.K = "u"
			if o.Err != nil {
				l.Err = o.Err.Error()
			}
		case *lab.GapObservation:
			l.K, l.Lost = "g", o.Lost
		default:
			continue
		}
		r.put(l)
	}
	r.write()
	return r.err
}

// Flush writes the tapes that wait for a batch and reports the first
// error of the recording.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write()
	return r.err
}

// Bytes reports how many bytes the session wrote to the file.
func (r *Recorder) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

// Close writes out what is buffered and closes the file.
func (r *Recorder) Close() error {
	err := r.Flush()
	return errors.Join(err, r.f.Close())
}

// Session is one recorded session: the cluster as it was described when
// it began, and what was observed, in order.
type Session struct {
	Start        time.Time
	Info         *lab.Info
	Observations []lab.Observation
	// Taken is when the workspace took each observation, in
	// Observations' order: a frame shows what was taken by its moment.
	// Version 1 recordings do not say; each was taken when observed.
	Taken []time.Time
	// Tapes are the views' own sources' messages, in order.
	Tapes []Tape
	// Version is the format the session was read from.
	Version int

	// checkpoints are the keyframes StateAt seeks from, made on first
	// use.
	checkpoints []*checkpoint
	// base is what the views held at the session's first moment kept in
	// memory (From), when a Live's window dropped what came before; the
	// records start after it.
	base *checkpoint
}

// From is the first moment of the session that can be drawn: its start,
// or the start of the window a Live keeps in memory (the recording file
// has the rest).
func (s *Session) From() time.Duration {
	if s.base == nil {
		return 0
	}
	return s.base.at
}

// Duration is how long after its start the session's last observation
// or tape came.
func (s *Session) Duration() time.Duration {
	d := s.From()
	if n := len(s.Observations); n > 0 {
		d = max(d, s.taken(n-1).Sub(s.Start))
	}
	if n := len(s.Tapes); n > 0 {
		d = max(d, s.Tapes[n-1].At.Sub(s.Start))
	}
	return d
}

// Load reads every session of the recording at path.
func Load(path string) ([]*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, i18n.Wrap(err, "record.err.open", path)
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads every session of a recording; name says where it came from,
// for errors.
func Read(rd io.Reader, name string) ([]*Session, error) {
	var sessions []*Session
	// batchAt is when the workspace took the batchLeft observations
	// still to come of the last batch line.
	var batchAt time.Time
	var batchLeft uint64
	br := bufio.NewReader(rd)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, i18n.Wrap(err, "record.err.open", name)
		}
		data, err := io.ReadAll(zr)
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			// A crash cut the last batch short: the batches before it
			// are whole, and its whole lines are kept.
			data = data[:bytes.LastIndexByte(data, '\n')+1]
		case err != nil:
			return nil, i18n.Wrap(err, "record.err.open", name)
		}
		rd = bytes.NewReader(data)
	} else {
		rd = br
	}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if bytes.Contains(b[:min(len(b), 32)], []byte(`"klab":`)) {
			var h header
			if err := json.Unmarshal(b, &h); err != nil {
				return nil, i18n.Wrap(err, "record.err.line", name, n)
			}
			if h.Klab != "recording" || h.V < 1 || h.V > Version || h.Info == nil {
				return nil, i18n.NewError("record.err.header", name, n, h.V)
			}
			sessions = append(sessions, &Session{Start: h.Start, Info: h.Info, Version: h.V})
			batchLeft = 0
			continue
		}
		if len(sessions) == 0 {
			return nil, i18n.NewError("record.err.no-header", name, n)
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, i18n.Wrap(err, "record.err.line", name, n)
		}
		s := sessions[len(sessions)-1]
		at := s.Start.Add(time.Duration(l.T) * time.Microsecond)
		if l.K == kindBatch && s.Version >= 2 {
			batchAt, batchLeft = at, l.N
			continue
		}
		if (l.K == kindTape || l.K == kindComponents) && s.Version >= 2 {
			if len(l.D) == 0 || l.K == kindTape && l.W == "" {
				return nil, i18n.NewError("record.err.tape", name, n)
			}
			view := l.W
			if l.K == kindComponents {
				view = Components
			}
			s.Tapes = append(s.Tapes, Tape{At: at, View: view, Data: []byte(l.D), Line: n})
			continue
		}
		h := lab.Observed{Seq: l.N, Member: l.M, At: at}
		var o lab.Observation
		switch {
		case l.K == "s" && l.Status != nil:
			o = &lab.StatusObservation{Observed: h, Status: *l.Status}
		case l.K == "e" && l.Event != nil:
			o = &lab.EventObservation{Observed: h, Event: *l.Event}
		case l.K == "u":
			o = &lab.UnreachableObservation{Observed: h, Err: errors.New(l.Err)}
		case l.K == "g":
			o = &lab.GapObservation{Observed: h, Lost: l.Lost}
		default:
			return nil, i18n.NewError("record.err.kind", name, n, l.K)
		}
		s.Observations = append(s.Observations, o)
		if s.Version >= 2 {
			taken := at
			if batchLeft > 0 {
				taken, batchLeft = batchAt, batchLeft-1
			}
			s.Taken = append(s.Taken, taken)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, i18n.Wrap(err, "record.err.open", name)
	}
	if len(sessions) == 0 {
		return nil, i18n.NewError("record.err.empty", name)
	}
	return sessions, nil
}

// String describes a session in one line, for lists.
func (s *Session) String() string {
	return fmt.Sprintf("%s %s (%d)", s.Info.Name, s.Start.Format(time.RFC3339), len(s.Observations)+len(s.Tapes))
}

// Live is a workspace's recording: the file it appends to (none when the
// file cannot be opened), which gets everything, and the session so far,
// of which it keeps the latest moments in memory for the timeline (its
// Window). Its methods are called from the workspace's Update loop.
type Live struct {
	rec    *Recorder
	s      *Session
	window Window
	// kept estimates the heap the session holds; trims counts the
	// times the window moved.
	kept  int64
	trims int
	// now says when the workspace takes a batch; tests make the time.
	now func() time.Time
	// c is what the views that fold a trimmed start draw with.
	c *common.Common
}

// NewLive begins a session of the cluster info describes at start,
// written to rec when it is not nil, and kept in memory within
// DefaultWindow.
func NewLive(rec *Recorder, info *lab.Info, start time.Time) *Live {
	return &Live{rec: rec, s: &Session{Start: start, Info: info, Version: Version}, window: DefaultWindow, now: time.Now}
}

// SetWindow bounds what the session keeps in memory from now on; the zero
// Window keeps everything.
func (l *Live) SetWindow(w Window) { l.window = w }

// Observe records a batch of the Observer's stream, taken now.
func (l *Live) Observe(batch []lab.Observation) {
	now := l.now()
	l.s.Observations = append(l.s.Observations, batch...)
	for _, o := range batch {
		l.s.Taken = append(l.s.Taken, now)
		l.kept += sizeOfObservation(o)
	}
	l.s.checkpoints = nil
	if l.rec != nil {
		_ = l.rec.RecordTaken(batch, now)
	}
	if l.over() {
		l.trim()
	}
}

// Tape records a tape of view's own sources, or the components' report
// (view Components), taken at at.
func (l *Live) Tape(view string, at time.Time, data []byte) {
	l.s.Tapes = append(l.s.Tapes, Tape{At: at, View: view, Data: data})
	l.kept += sizeOfTape(&l.s.Tapes[len(l.s.Tapes)-1])
	l.s.checkpoints = nil
	if l.rec != nil {
		_ = l.rec.RecordTape(view, at, data)
	}
	if l.over() {
		l.trim()
	}
}

// Session returns the session so far, to scrub: a copy that later
// records leave alone. It begins at the window's start (From).
func (l *Live) Session() *Session {
	s := *l.s
	s.Observations = s.Observations[:len(s.Observations):len(s.Observations)]
	s.Taken = s.Taken[:len(s.Taken):len(s.Taken)]
	s.Tapes = s.Tapes[:len(s.Tapes):len(s.Tapes)]
	s.checkpoints = nil
	return &s
}

// Close writes what waits and closes the file.
func (l *Live) Close() error {
	if l.rec == nil {
		return nil
	}
	return l.rec.Close()
}

// ForCluster opens the cluster's recording in its state dir and returns
// the workspace's recording of it; without a state dir or a file that
// opens, the session is still kept in memory for the timeline (a
// recording is never worth stopping the lesson for).
func ForCluster(info *lab.Info) *Live {
	start := time.Now()
	dir, err := lab.StateDir(info.Name)
	if err != nil {
		return NewLive(nil, info, start)
	}
	r, err := Open(filepath.Join(dir, FileName), info, start)
	if err != nil {
		return NewLive(nil, info, start)
	}
	return NewLive(r, info, start)
}

// taken returns when the workspace took observation i.
func (s *Session) taken(i int) time.Time {
	if i < len(s.Taken) {
		return s.Taken[i]
	}
	return s.Observations[i].Header().At
}
