package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/views/events/feed/feedtest"
	"github.com/klab-dev/klab/ui/views/scheduler"
)

// TestFeedsFromARealCluster starts a small cluster in this process (one
// master, one worker), points both live views at it, creates a pod, and
// waits for what the cluster really did to reach them: the scheduler's
// decision in the Scheduler view, the Scheduled Event and the binding
// request in this one.
func TestFeedsFromARealCluster(t *testing.T) {
	testenv.EndToEnd(t)
	// A short home: the control socket's path must fit a Unix socket's.
	home, err := os.MkdirTemp("", "klab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("KLAB_HOME", home)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(home, "no-docker.sock"))
	suffix := make([]byte, 3)
	rand.Read(suffix)
	name := "views-" + hex.EncodeToString(suffix)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := lab.Up(ctx, lab.Spec{Name: name, Masters: 1, Workers: 1, Speed: 10, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background(), nil) })
	t.Logf("cluster up in %v", time.Since(start).Round(time.Millisecond))
	info := c.Info()

	ui := uitest.Setup(t, i18n.English)
	sv, ev := scheduler.New(ui), New(ui)
	sv.SetSize(120, 40)
	ev.SetSize(120, 40)
	feeds, stop := context.WithCancel(ctx)
	defer stop()
	cmd := tea.Batch(sv.Start(feeds, info), ev.Start(feeds, info))
	cmd = tea.Batch(cmd, ev.Show(true))
	update := func(msg tea.Msg) tea.Cmd { return tea.Batch(sv.Update(msg), ev.Update(msg)) }

	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app:v1"}}},
	}
	created := time.Now()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	scheduled := func() bool {
		for _, r := range ev.events.rows {
			if r.Reason == "Scheduled" && r.Name == "hello" {
				return true
			}
		}
		return false
	}
	bindingRequest := func() bool {
		for _, r := range ev.requests.rows {
			if r.Verb == "create" && r.Resource == "pods" && r.Subresource == "binding" && r.Name == "hello" && r.Code == 201 {
				return true
			}
		}
		return false
	}
	decided := func() bool {
		got := sv.View()
		return strings.Contains(got, "default/hello") && strings.Contains(got, "bound to worker-1")
	}
	// The events view counts as connected once its watch runs and the
	// request log streams; under load its watch may be (re)starting when
	// the pod's first events are already in, so that is waited for too.
	connected := func() bool {
		return ev.watching && ev.eventsErr == "" && len(ev.servers) > 0 && ev.servers[0].Connected
	}
	feedtest.Drive(t, cmd, update, func() bool { return scheduled() && bindingRequest() && decided() && connected() }, 30*time.Second)
	t.Logf("decision, event and request seen %v after the pod was created", time.Since(created).Round(time.Millisecond))

	got := sv.View()
	for _, want := range []string{"leader master-1", "✓ master-1", "node(s) had untolerated taint(s)", "★ worker-1 is the only node that fits"} {
		if !strings.Contains(got, want) {
			t.Errorf("scheduler view lacks %q:\n%s", want, got)
		}
	}
	if !ev.watching || ev.eventsErr != "" || !ev.servers[0].Connected {
		t.Errorf("events view not connected: watching %v (%s), request log %+v", ev.watching, ev.eventsErr, ev.servers)
	}
}
