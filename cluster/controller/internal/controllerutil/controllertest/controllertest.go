// Package controllertest is the fixture the workload controllers' unit
// tests share, in the manner of sample-controller's controller_test.go: a
// fake clientset, shared informers whose indexers a test fills by hand
// (the informers never run), and the client actions of one sync written as
// short strings ("create pods", "update replicasets/status web-1") a table
// test can compare.
package controllertest

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/klab-dev/klab/cluster/controller/controllerctx"
	"github.com/klab-dev/klab/cluster/internal/componentbase"
)

// Fixture is one controller test's world.
type Fixture struct {
	Client   *fake.Clientset
	Recorder *record.FakeRecorder
	Context  controllerctx.Context
	names    atomic.Int64
}

// New returns a fixture whose fake API holds objects. The same objects
// must also be put in the informers with Index, as the informers do not
// run.
func New(objects ...runtime.Object) *Fixture {
	f := &Fixture{Client: fake.NewClientset(objects...), Recorder: record.NewFakeRecorder(1000)}
	// The fake API does not implement generateName; name created objects
	// <generateName>1, 2, ... so creates of the same template do not
	// collide.
	f.Client.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj := action.(clienttesting.CreateAction).GetObject()
		if m, err := meta.Accessor(obj); err == nil && m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(fmt.Sprintf("%s%d", m.GetGenerateName(), f.names.Add(1)))
		}
		return false, nil, nil
	})
	f.Context = controllerctx.Context{
		Client:    f.Client,
		Informers: informers.NewSharedInformerFactory(f.Client, 0),
		Recorder:  func(string) record.EventRecorder { return f.Recorder },
		Speed:     1,
		Logger:    componentbase.Logger(nil),
	}
	return f
}

// Index puts objects into the informers' caches, where a sync reads them.
func (f *Fixture) Index(objects ...runtime.Object) error {
	inf := f.Context.Informers
	for _, obj := range objects {
		var err error
		switch o := obj.(type) {
		case *corev1.Pod:
			err = inf.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *corev1.Node:
			err = inf.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *corev1.ReplicationController:
			err = inf.Core().V1().ReplicationControllers().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			err = inf.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *appsv1.Deployment:
			err = inf.Apps().V1().Deployments().Informer().GetIndexer().Add(o)
		case *appsv1.DaemonSet:
			err = inf.Apps().V1().DaemonSets().Informer().GetIndexer().Add(o)
		case *appsv1.StatefulSet:
			err = inf.Apps().V1().StatefulSets().Informer().GetIndexer().Add(o)
		case *appsv1.ControllerRevision:
			err = inf.Apps().V1().ControllerRevisions().Informer().GetIndexer().Add(o)
		case *batchv1.Job:
			err = inf.Batch().V1().Jobs().Informer().GetIndexer().Add(o)
		case *batchv1.CronJob:
			err = inf.Batch().V1().CronJobs().Informer().GetIndexer().Add(o)
		case *policyv1.PodDisruptionBudget:
			err = inf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(o)
		default:
			err = fmt.Errorf("controllertest: no informer for %T", obj)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Actions returns the client's actions so far as "verb resource[/sub]
// [name]" strings, dropping the informers' list and watch calls. Creates
// show the generateName when the caller gave no name.
func (f *Fixture) Actions() []string {
	var out []string
	for _, a := range f.Client.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, Describe(a))
	}
	return out
}

// Describe writes one action as Actions does.
func Describe(a clienttesting.Action) string {
	resource := a.GetResource().Resource
	if sub := a.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	name := ""
	switch act := a.(type) {
	case clienttesting.CreateAction:
		if m, err := meta.Accessor(act.GetObject()); err == nil {
			name = m.GetGenerateName()
			if name == "" {
				name = m.GetName()
			}
		}
	case clienttesting.UpdateAction:
		if m, err := meta.Accessor(act.GetObject()); err == nil {
			name = m.GetName()
		}
	case clienttesting.PatchAction:
		name = act.GetName()
	case clienttesting.DeleteAction:
		name = act.GetName()
	case clienttesting.GetAction:
		name = act.GetName()
	}
	return strings.TrimSpace(a.GetVerb() + " " + resource + " " + name)
}

// Events drains the events recorded so far, as "Type Reason Message".
func (f *Fixture) Events() []string {
	var out []string
	for {
		select {
		case e := <-f.Recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Sorted returns a sorted copy: creates and deletes a sync issues in
// parallel have no order.
func Sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
