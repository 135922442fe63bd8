package lab

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestDockerResetToStep resets a 3+3 Docker cluster from the last step of a
// three-step lesson to its second step, as klab reset --step does: every
// component stopped (stood down inside its container), each member's data
// dir restored inside its volume, the members started as a new cluster.
// The objects made in the later step are gone (their pods' containers too),
// those of the second step's start are there and run, the etcd cluster is a
// new one (new cluster ID, raft log started over), and the cluster takes
// writes. Then `klab snapshot restore` of a snapshot taken before a
// Deployment was deleted brings the Deployment back. The reset's time is
// logged; make bench measures it (resetbench).
func TestDockerResetToStep(t *testing.T) {
	bin := requireDocker(t)
	testHome(t)
	name := dockerClusterName(t, "h32-dockerlessons-reset")
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	c, err := Up(ctx, Spec{Name: name, Masters: 3, Workers: 3, Speed: 10, Runtime: RuntimeDocker, NoFsync: true}, Options{Binary: bin})
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	f := &loopFixture{t: t, name: name, c: c, ctx: ctx}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Info().Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if f.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	deploys := f.client.AppsV1().Deployments("default")
	configMaps := f.client.CoreV1().ConfigMaps("default")
	const lesson = "reset-e2e"
	snap := func(step string) {
		t.Helper()
		if _, err := SaveStepSnapshot(ctx, name, lesson, step); err != nil {
			t.Fatalf("snapshot of step %s: %v", step, err)
		}
	}

	// Step 1 creates "first"; step 2 starts with it and creates
	// "second" and a ConfigMap; step 3 is the last.
	snap("one")
	if _, err := deploys.Create(ctx, deployment("first", 1, "klab/app:latest"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitRunning("app=first", 1, 2*time.Minute)
	snap("two")
	if _, err := deploys.Create(ctx, deployment("second", 2, "klab/app:latest"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Data: map[string]string{"step": "two"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitRunning("app=second", 2, 2*time.Minute)
	snap("three")
	before, err := Status(ctx, name)
	if err != nil {
		t.Fatal(err)
	}

	res, err := ResetToStep(ctx, name, lesson, "two", []string{"three"})
	if err != nil {
		t.Fatalf("ResetToStep: %v", err)
	}
	t.Logf("reset of a 3+3 Docker cluster to a step took %v (new cluster %s, was %s, leader %s, term %d, was %d)",
		res.Elapsed, res.ClusterID, res.OldClusterID, res.Leader, res.Term, leaderTerm(before))
	if res.ClusterID == "" || res.OldClusterID == "" || res.ClusterID == res.OldClusterID {
		t.Errorf("cluster ID after the reset = %q, before = %q: want a new cluster", res.ClusterID, res.OldClusterID)
	}
	after, err := Status(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if after.Leader == "" {
		t.Error("no leader after the reset")
	}
	for _, m := range after.Members {
		if m.Error != "" {
			t.Errorf("member %s does not answer after the reset: %s", m.Name, m.Error)
			continue
		}
		if old := memberNamed(before, m.Name); m.RaftIndex >= old.RaftIndex {
			t.Errorf("member %s raft index %d after the reset, %d before: raft did not start over", m.Name, m.RaftIndex, old.RaftIndex)
		}
	}
	if _, ok := StepSnapshot(name, lesson, "three"); ok {
		t.Error("the later step's snapshot is still kept after the reset")
	}
	if r, err := ReadLessonReset(name); err != nil || r == nil || r.Lesson != lesson || r.Step != "two" {
		t.Errorf("recorded reset = %+v, %v; want %s/two", r, err, lesson)
	}

	// The moment of step two: "first" and its pod, nothing of later.
	if _, err := deploys.Get(ctx, "first", metav1.GetOptions{}); err != nil {
		t.Errorf("deployment first after the reset: %v", err)
	}
	for _, gone := range []func() error{
		func() error { _, err := deploys.Get(ctx, "second", metav1.GetOptions{}); return err },
		func() error { _, err := configMaps.Get(ctx, "later", metav1.GetOptions{}); return err },
	} {
		if err := gone(); !apierrors.IsNotFound(err) {
			t.Errorf("an object of the later step after the reset: err = %v, want NotFound", err)
		}
	}
	f.waitRunning("app=first", 1, 2*time.Minute)
	// The kubelets stop the containers of pods the restored cluster never
	// had.
	f.eventually(2*time.Minute, "the later step's pod containers gone", func() (bool, error) {
		n, err := podContainers(name, "second")
		return n == 0, err
	})
	if _, err := deploys.Create(ctx, deployment("after", 1, "klab/app:latest"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after the reset: %v", err)
	}
	f.waitRunning("app=after", 1, 2*time.Minute)

	// klab snapshot save, a Deployment deleted, klab snapshot restore.
	path, err := SaveSnapshot(ctx, name, "before-delete")
	if err != nil {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	if err := deploys.Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(time.Minute, "first deleted", func() (bool, error) {
		_, err := deploys.Get(ctx, "first", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	restored, err := Restore(ctx, name, path)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if restored.ClusterID == res.ClusterID {
		t.Errorf("cluster ID after the second restore = %s, unchanged", restored.ClusterID)
	}
	f.eventually(time.Minute, "first back", func() (bool, error) {
		_, err := deploys.Get(ctx, "first", metav1.GetOptions{})
		return err == nil, err
	})
	f.waitRunning("app=first", 1, 2*time.Minute)
}

// podContainers counts the running containers of the cluster's pods whose
// name starts with the Deployment's name, as docker ps shows them.
func podContainers(cluster, deployment string) (int, error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return 0, nil
	}
	out, err := exec.Command("docker", "ps", "--filter", "label=io.klab.cluster="+cluster, "--filter", "label=io.klab.role=pod", "--format", `{{.Label "io.kubernetes.pod.name"}}`).Output()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, deployment+"-") {
			n++
		}
	}
	return n, nil
}
