//go:build linux

package main

import (
	"context"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/record"
	"github.com/klab-dev/klab/ui/views/events"
	"github.com/klab-dev/klab/ui/views/overview"
	"github.com/klab-dev/klab/ui/views/proxy"
	"github.com/klab-dev/klab/ui/views/scheduler"
)

// tapeStats counts what the views' tapes cost.
type tapeStats struct {
	mu        sync.Mutex
	counting  bool
	tapes     int
	recording time.Duration
}

// followViews runs the sources of the Overview, Scheduler, Proxy and
// Events views as the workspace does (the Events view shown, so that the
// API servers' requests stream too) until ctx ends, and records each
// message's tape with rec when it is not nil.
func followViews(ctx context.Context, info *lab.Info, rec *record.Recorder, stats *tapeStats) {
	c := common.New()
	st := labstate.New(info.Name, info.Members)
	ev := events.New(c)
	views := map[string]common.View{
		record.ViewOverview: overview.New(c, st), record.ViewScheduler: scheduler.New(c),
		record.ViewProxy: proxy.New(c), record.ViewEvents: ev,
	}
	msgs := make(chan tea.Msg, 1024)
	var run func(tea.Cmd)
	deliver := func(msg tea.Msg) {
		switch msg := msg.(type) {
		case nil:
		case tea.BatchMsg:
			for _, c := range msg {
				run(c)
			}
		default:
			select {
			case msgs <- msg:
			case <-ctx.Done():
			}
		}
	}
	run = func(cmd tea.Cmd) {
		if cmd != nil {
			go func() { deliver(cmd()) }()
		}
	}
	for _, v := range views {
		v.SetSize(120, 40)
		run(v.Start(ctx, info))
	}
	run(ev.Show(true))
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-msgs:
			for name, v := range views {
				if rec != nil && v.Owns(msg) {
					start := time.Now()
					if t := v.Tape(msg); t != nil {
						rec.RecordTape(name, time.Now(), t)
						took := time.Since(start)
						stats.mu.Lock()
						if stats.counting {
							stats.tapes++
							stats.recording += took
						}
						stats.mu.Unlock()
					}
				}
				run(v.Update(msg))
			}
		}
	}
}

// churnReplicas is how far the busy phase's Deployment scales up, every
// other churnEvery.
const (
	churnReplicas = 20
	churnEvery    = 10 * time.Second
)

// churn scales a Deployment between 0 and churnReplicas pods until ctx
// ends: pods created, scheduled, started, their Events and endpoints,
// then all deleted.
func churn(ctx context.Context, info *lab.Info) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", info.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	labels := map[string]string{"app": "uibench-churn"}
	zero := int32(0)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "uibench-churn", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "klab/app:v1"}}}}}}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "uibench-churn", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	go func() {
		up := true
		t := time.NewTicker(churnEvery)
		defer t.Stop()
		for {
			n := int32(0)
			if up {
				n = churnReplicas
			}
			scale, err := client.AppsV1().Deployments("default").GetScale(ctx, "uibench-churn", metav1.GetOptions{})
			if err == nil {
				scale.Spec.Replicas = n
				client.AppsV1().Deployments("default").UpdateScale(ctx, "uibench-churn", scale, metav1.UpdateOptions{})
			}
			up = !up
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return nil
}
