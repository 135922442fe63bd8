package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/labio"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/record"
	"github.com/klab-dev/klab/ui/views/events"
	"github.com/klab-dev/klab/ui/views/overview"
	"github.com/klab-dev/klab/ui/views/proxy"
	"github.com/klab-dev/klab/ui/views/raft"
	"github.com/klab-dev/klab/ui/views/scheduler"
)

// driver runs a workspace as Bubble Tea would: every command in a
// goroutine, every message through Update, one at a time.
type driver struct {
	t    *testing.T
	ctx  context.Context
	m    *Model
	msgs chan tea.Msg
	// dump draws what the views show, for a failure.
	dump func() string
}

func (d *driver) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() { d.deliver(cmd()) }()
}

func (d *driver) deliver(msg tea.Msg) {
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			d.run(c)
		}
	default:
		select {
		case d.msgs <- msg:
		case <-d.ctx.Done():
		}
	}
}

// until takes messages until cond holds.
func (d *driver) until(what string, timeout time.Duration, cond func() bool) {
	d.t.Helper()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case msg := <-d.msgs:
			_, cmd := d.m.Update(msg)
			d.run(cmd)
		case <-deadline:
			d.t.Fatalf("no %s within %s; the views show:\n%s", what, timeout, d.dump())
		}
	}
}

// TestRewindOnCluster records a real local cluster's workspace while a
// Service and a pod are created, and checks the recording against what
// the views drew live: the timeline (T) scrubbed back to before the pod
// draws the frames drawn then, without the pod; the file read back, as
// klab replay reads it with no cluster, draws at its end the frames the
// live views drew at that moment.
func TestRewindOnCluster(t *testing.T) {
	testenv.EndToEnd(t)
	home, err := os.MkdirTemp("", "h31rw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("KLAB_HOME", home)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl, err := lab.Up(ctx, lab.Spec{Name: "h31rw", Masters: 1, Workers: 1, Speed: 10, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { cl.Close(context.Background(), nil) })
	info := cl.Info()

	c := uitest.Setup(t, i18n.English)
	c.Now = time.Now
	st := labstate.New(info.Name, info.Members)
	views := map[ViewID]common.View{
		ViewOverview: overview.New(c, st), ViewRaft: raft.New(c, st),
		ViewScheduler: scheduler.New(c), ViewProxy: proxy.New(c), ViewEvents: events.New(c),
	}
	path := filepath.Join(t.TempDir(), record.FileName)
	start := time.Now()
	rec, err := record.Open(path, info, start)
	if err != nil {
		t.Fatal(err)
	}
	live := record.NewLive(rec, info, start)
	m := New(c, labio.InEngine(cl), st, Options{Views: views, Recording: live})
	m.SetSize(120, 40)
	d := &driver{t: t, ctx: ctx, m: m, msgs: make(chan tea.Msg, 4096)}
	d.run(m.Start(ctx))
	// The Events view follows the API servers' requests while shown.
	_, cmd := m.Update(uitest.Key("5"))
	d.run(cmd)

	frame := func(id ViewID) string { return views[id].View() }
	d.dump = func() string {
		var b strings.Builder
		for id := ViewOverview; id <= ViewEvents; id++ {
			b.WriteString(frame(id) + "\n----\n")
		}
		return b.String()
	}
	d.until("scheduler and Events followed, both nodes Ready", 2*time.Minute, func() bool {
		return strings.Contains(frame(ViewScheduler), "✓ master-1") &&
			strings.Contains(frame(ViewEvents), "master-1") &&
			strings.Contains(frame(ViewOverview), "worker-1") && st.Leader() != nil
	})
	d.until("a few seconds of the cluster", 30*time.Second, func() bool { return time.Since(start) > 5*time.Second })

	// Before: the frames as drawn live, and the session so far.
	names := []ViewID{ViewOverview, ViewScheduler, ViewProxy, ViewEvents}
	before := map[ViewID]string{}
	for _, id := range names {
		before[id] = frame(id)
	}
	beforeAt := live.Session().Duration()
	if strings.Contains(before[ViewScheduler], "web-1") {
		t.Fatalf("the pod is scheduled before it was created:\n%s", before[ViewScheduler])
	}

	client := clientOf(t, info)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app:v1"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d.until("the pod scheduled, its events, the Service", 2*time.Minute, func() bool {
		return strings.Contains(frame(ViewScheduler), "default/web-1") &&
			strings.Contains(frame(ViewEvents), "pod/web-1") &&
			strings.Contains(frame(ViewProxy), "default/web")
	})

	// The timeline, scrubbed back to before the pod, draws what was drawn.
	_, cmd = m.Update(uitest.Key("T"))
	d.run(cmd)
	if !m.Rewound() {
		t.Fatalf("T did not open the timeline: %s", m.status.text())
	}
	m.seek(beforeAt)
	// Drawn in the live views' size, the timeline's two lines aside.
	m.rewind.views.SetSize(m.viewW, m.viewH)
	for _, id := range names {
		m.view = id
		got := m.rewind.views.Draw(recordNames[id])
		if got != before[id] {
			t.Errorf("%s scrubbed back to %s is not what was drawn then:\n--- live\n%s\n--- rewound\n%s", recordNames[id], beforeAt, before[id], got)
		}
	}
	// Live again: the views are those of now.
	_, _ = m.Update(uitest.Key("esc"))
	if m.Rewound() || !strings.Contains(frame(ViewScheduler), "default/web-1") {
		t.Fatalf("esc did not bring back the live views")
	}

	// After: the recording closed here holds everything drawn so far.
	after := map[ViewID]string{ViewRaft: frame(ViewRaft)}
	for _, id := range names {
		after[id] = frame(id)
	}
	m.Stop()
	sessions, err := record.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sessions[len(sessions)-1]
	if s.Version != record.Version || len(s.Tapes) == 0 {
		t.Fatalf("read version %d with %d tapes", s.Version, len(s.Tapes))
	}
	rc := uitest.Setup(t, i18n.English)
	v, err := s.ViewsAt(rc, s.Duration())
	if err != nil {
		t.Fatal(err)
	}
	v.SetSize(m.viewW, m.viewH)
	for id, want := range after {
		if got := v.Draw(recordNames[id]); got != want {
			t.Errorf("klab replay draws %s at the end unlike the live view:\n--- live\n%s\n--- replay\n%s", recordNames[id], want, got)
		}
	}
	back, err := s.ViewsAt(rc, beforeAt)
	if err != nil {
		t.Fatal(err)
	}
	back.SetSize(m.viewW, m.viewH)
	for _, id := range []ViewID{ViewScheduler, ViewProxy, ViewEvents} {
		if got := back.Draw(recordNames[id]); strings.Contains(got, "web-1") {
			t.Errorf("klab replay at %s (before the pod) shows it in %s:\n%s", beforeAt, recordNames[id], got)
		}
	}
	if got := back.Draw(record.ViewOverview); got != before[ViewOverview] {
		t.Errorf("klab replay's Overview at %s is not the live one:\n--- live\n%s\n--- replay\n%s", beforeAt, before[ViewOverview], got)
	}
}

func clientOf(t *testing.T, info *lab.Info) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
