package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/lessons"
)

// clusterEnv, set, makes the test binary run a cluster of that name
// instead of the tests (see serveCluster).
const clusterEnv = "KLAB_LIVE_TEST_CLUSTER"

// sharedName names the cluster the Feed tests share.
const sharedName = "live-feed"

func TestMain(m *testing.M) {
	if name := os.Getenv(clusterEnv); name != "" {
		os.Exit(serveCluster(name))
	}
	// One state dir for the whole package, short enough for the control
	// socket's path.
	home, err := os.MkdirTemp("", "klab-live")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("KLAB_HOME", home)
	os.Setenv("KLAB_CLUSTER", "")
	i18n.SetLang(i18n.English)
	code := m.Run()
	shared.stop()
	os.RemoveAll(home)
	os.Exit(code)
}

// serveCluster runs a cluster of 3 masters and a worker in this process,
// as klab up does, until its standard input closes. The tests run it in a
// process of their own, so that theirs holds only what a Feed starts.
func serveCluster(name string) int {
	c, err := lab.Up(context.Background(), lab.Spec{Name: name, Masters: 3, Workers: 1, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	if err := c.Close(context.Background(), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// shared is the cluster the Feed tests share, started by the first one.
var shared sharedCluster

type sharedCluster struct {
	once  sync.Once
	cmd   *exec.Cmd
	stdin io.WriteCloser
	info  *lab.Info
	err   error
}

// get starts the shared cluster in a child process, once, and returns it.
func (s *sharedCluster) get(t *testing.T) *lab.Info {
	t.Helper()
	testenv.EndToEnd(t)
	s.once.Do(func() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), clusterEnv+"="+sharedName)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			s.err = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			s.err = err
			return
		}
		if err := cmd.Start(); err != nil {
			s.err = err
			return
		}
		s.cmd, s.stdin = cmd, stdin
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			s.err = fmt.Errorf("cluster process said %q (%v)", line, err)
			return
		}
		s.info, s.err = lab.LoadInfo(sharedName)
	})
	if s.err != nil {
		t.Fatalf("shared cluster: %v", s.err)
	}
	return s.info
}

// stop ends the shared cluster's process and removes the cluster.
func (s *sharedCluster) stop() {
	if s.cmd == nil {
		return
	}
	s.stdin.Close()
	s.cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lab.Down(ctx, sharedName, false, nil)
}

// picture is what a reader of a Feed has been told.
type picture struct {
	members  map[string]lessons.MemberObserved
	statuses map[string]int // MemberObserved per member
	clocks   map[string]lessons.ClockObserved
	sent     map[string]int
	nodes    map[string]lessons.NodeObserved
	pods     map[string]lessons.PodObserved
	keys     map[string]lessons.KeyObserved
	batches  int
}

func newPicture() *picture {
	return &picture{
		members: map[string]lessons.MemberObserved{}, statuses: map[string]int{}, clocks: map[string]lessons.ClockObserved{},
		sent: map[string]int{}, nodes: map[string]lessons.NodeObserved{}, pods: map[string]lessons.PodObserved{},
		keys: map[string]lessons.KeyObserved{},
	}
}

func (p *picture) apply(batch []lessons.Observation) {
	p.batches++
	for _, o := range batch {
		switch o := o.(type) {
		case lessons.MemberObserved:
			p.members[o.Member] = o
			p.statuses[o.Member]++
		case lessons.ClockObserved:
			p.clocks[o.Member] = o
		case lessons.MessageObserved:
			p.sent[o.Type]++
		case lessons.NodeObserved:
			p.nodes[o.Node] = o
		case lessons.PodObserved:
			p.pods[o.Namespace+"/"+o.Name] = o
		case lessons.KeyObserved:
			p.keys[o.Key] = o
		}
	}
}

// leader returns the member that leads in the highest term.
func (p *picture) leader() (lessons.MemberObserved, bool) {
	var l lessons.MemberObserved
	for _, m := range p.members {
		if m.State == lessons.MemberLeader && m.Term >= l.Term {
			l = m
		}
	}
	return l, l.Member != ""
}

// awaitTimeout bounds every wait of the Feed tests.
const awaitTimeout = 30 * time.Second

// await reads the feed into p until cond holds.
func (p *picture) await(t *testing.T, f *Feed, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(awaitTimeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case batch, ok := <-f.Observations():
			if !ok {
				t.Fatalf("feed closed while waiting for %s", what)
			}
			p.apply(batch)
		case <-deadline.C:
			t.Fatalf("no %s within %s", what, awaitTimeout)
		}
	}
}

// awaitClosed reads the feed into p until ch is closed.
func (p *picture) awaitClosed(t *testing.T, f *Feed, what string, ch <-chan struct{}) {
	t.Helper()
	deadline := time.NewTimer(awaitTimeout)
	defer deadline.Stop()
	for {
		select {
		case <-ch:
			return
		case batch, ok := <-f.Observations():
			if !ok {
				t.Fatalf("feed closed while waiting for %s", what)
			}
			p.apply(batch)
		case <-deadline.C:
			t.Fatalf("no %s within %s", what, awaitTimeout)
		}
	}
}

var goroutineHeader = regexp.MustCompile(`(?m)^goroutine (\d+) \[`)

// goroutines returns the IDs of the running goroutines and their stacks.
func goroutines() (map[string]bool, string) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	ids := map[string]bool{}
	for _, m := range goroutineHeader.FindAllSubmatch(buf, -1) {
		ids[string(m[1])] = true
	}
	return ids, string(buf)
}

// checkNoNewGoroutines fails the test if goroutines started since before
// are still running after a grace period for those already ending
// (connections closing): a goroutine cannot be waited on, so this looks
// again every few milliseconds, as goleak does.
func checkNoNewGoroutines(t *testing.T, before map[string]bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		now, stacks := goroutines()
		var extra []string
		for id := range now {
			if !before[id] {
				extra = append(extra, id)
			}
		}
		if len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			slices.Sort(extra)
			t.Fatalf("%d goroutines left running (%v):\n%s", len(extra), extra, stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
