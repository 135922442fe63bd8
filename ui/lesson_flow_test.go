package ui

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/lessons"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// memberListRunner stands in for klab's own runner (cmd/klab, which a
// test of this package cannot import) for one command: etcdctl member
// list, answered from the cluster the command names, in etcdctl's simple
// format, and klab status, answered from each member's status. Any other
// command line, or one not aimed at cluster name, fails the test.
func memberListRunner(t *testing.T, name string) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if slices.Equal(args, []string{"klab", "status", "--name=" + name}) {
			// Step 1's act: each member's role, from its own status.
			info, err := lab.LoadInfo(name)
			if err != nil {
				return err
			}
			cli, err := info.EtcdClient()
			if err != nil {
				return err
			}
			defer cli.Close()
			for _, m := range info.Members {
				st, err := cli.Status(ctx, m.ClientURL)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s leader=%x term=%d\n", m.Name, st.Leader, st.RaftTerm)
			}
			return nil
		}
		want := []string{"klab", "etcdctl", "--name=" + name, "member", "list"}
		if !slices.Equal(args, want) {
			t.Errorf("command line = %q, want %q", args, want)
			return fmt.Errorf("unexpected command line %q", args)
		}
		info, err := lab.LoadInfo(name)
		if err != nil {
			return err
		}
		cli, err := info.EtcdClient()
		if err != nil {
			return err
		}
		defer cli.Close()
		resp, err := cli.MemberList(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "Error:", err)
			return err
		}
		for _, m := range resp.Members {
			fmt.Fprintf(stdout, "%x, started, %s, %s, %s, %v\n", m.ID, m.Name,
				strings.Join(m.PeerURLs, ","), strings.Join(m.ClientURLs, ","), m.IsLearner)
		}
		return nil
	}
}

// TestLessonFlow takes a lesson as a student does, on a real local
// cluster: pick Raft leader election on the home screen with the arrow
// keys, watch the cluster being created, pass the first step with
// klab status in the command line once a leader is elected, run a command
// on the workspace's cluster, go on to step 2, and quit removing the cluster. The progress file
// in KLAB_HOME keeps step 1 done and step 2 as the current step.
func TestLessonFlow(t *testing.T) {
	testenv.EndToEnd(t)
	name, opts := flowOptions(t, "lesson", func(name string, o *Options) { o.Run = memberListRunner(t, name) })
	if opts.Progress == nil {
		t.Fatal("no progress opened in KLAB_HOME")
	}
	lesson, _, err := ResolveLesson(opts.Lessons, "raft-election")
	if err != nil {
		t.Fatal(err)
	}
	// The home screen opens on the first lesson; raft-election is a few
	// rows down.
	downs := slices.IndexFunc(opts.Lessons, func(l *lessons.Lesson) bool { return l.ID == lesson.ID })
	if downs < 1 {
		t.Fatalf("raft-election is lesson %d of %d; the test expects it after the first", downs, len(opts.Lessons))
	}
	steps := len(lesson.Steps)

	// Wide enough for the lesson's title in the pane and etcdctl's lines
	// in the command's output.
	const width, height = 160, 48
	f := newFlow(t, opts, width, height)
	tm := f.tm
	waitFor, press, transcript := f.waitFor, f.press, &f.transcript

	waitFor("the lessons on the home screen", 0, 20*time.Second,
		allOf("Lessons", "Free play", lesson.Title.English))
	downKeys := slices.Repeat([]string{"down"}, downs)
	mark := press(downKeys...)
	// The hint under the form is the summary of the lesson focused.
	waitFor("raft-election focused", mark, 5*time.Second, allOf("Watch etcd's members elect a leader"))

	mark = press("enter")
	waitFor("the creation steps", mark, 30*time.Second,
		allOf("Starting cluster "+name+" with 3 masters", "✓ Creating the nodes (4, local runtime)"))
	stepLine := fmt.Sprintf("Step 1/%d", steps)
	waitFor("the workspace with the lesson pane", mark, 90*time.Second,
		allOf(lesson.Title.English, stepLine, lesson.Steps[0].Title.English, "[2 Raft]"))
	// Step 1's act is reading the roles: klab status, typed in the
	// command line.
	mark = press(":")
	waitFor("the command line", mark, 5*time.Second, allOf("Type kubectl, etcdctl or klab commands"))
	mark = transcript.Len()
	tm.Type("klab status")
	tm.Send(uitest.Key("enter"))
	waitFor("step 1 done once a leader is elected and klab status ran", mark, 30*time.Second,
		allOf("✓ Done — n for the next step", "followed by 3 of 3 members", "✓ Step done: "+lesson.Steps[0].Title.English))

	// The command line is still open: run a command on the workspace's
	// cluster.
	info, err := lab.LoadInfo(name)
	if err != nil {
		t.Fatal(err)
	}
	mark = transcript.Len()
	tm.Type("etcdctl member list")
	tm.Send(uitest.Key("enter"))
	// Every member of this cluster, by the ID its etcd gave it: the
	// command reached the workspace's cluster.
	var members []string
	for _, mem := range info.Members {
		members = append(members, mem.ID+", started, "+mem.Name+", "+mem.PeerURL)
	}
	waitFor("etcdctl's member list", mark, 20*time.Second, allOf(append(members, "$ etcdctl member list")...))

	mark = press("esc", "n")
	waitFor("step 2", mark, 5*time.Second,
		allOf(fmt.Sprintf("Step 2/%d", steps), lesson.Steps[1].Title.English, "… Waiting for:"))

	mark = press("q")
	waitFor("the quit dialog", mark, 5*time.Second, allOf("Quit klab? Cluster "+name+" runs in this window.", "r  remove the cluster"))
	press("r")
	f.finish()

	final := tm.FinalModel(t).(*Model)
	if closed, err := final.ws.Closed(); !closed || err != nil {
		t.Errorf("cluster closed = %v, err %v", closed, err)
	}
	if _, err := lab.LoadInfo(name); err == nil {
		t.Errorf("cluster %s is still there after r (remove)", name)
	}
	// The progress file, read afresh as klab's next run would.
	home, err := lab.Home()
	if err != nil {
		t.Fatal(err)
	}
	p, err := lessons.OpenProgress(filepath.Join(home, lessons.ProgressFile))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Done(lesson.ID, lesson.Steps[0].ID) {
		t.Errorf("progress does not record step %s done", lesson.Steps[0].ID)
	}
	if p.Done(lesson.ID, lesson.Steps[1].ID) {
		t.Errorf("progress records step %s done; its check never passed", lesson.Steps[1].ID)
	}
	if got := p.Current(lesson.ID); got != lesson.Steps[1].ID {
		t.Errorf("current step = %q, want %q", got, lesson.Steps[1].ID)
	}
}
