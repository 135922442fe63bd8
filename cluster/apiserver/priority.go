package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
	"github.com/klab-dev/klab/cluster/apiserver/validation"
)

// The Priority admission plugin, as upstream's: a new pod's
// priorityClassName is resolved into spec.priority and
// spec.preemptionPolicy (the scheduler orders its queue and preempts by
// them, and never looks the class up itself); a pod without one gets the
// globalDefault class, or priority 0 when there is none. Of
// PriorityClasses it keeps there being at most one globalDefault.

var priorityClassesGVR = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}

// admitPodPriority runs on a pod's create.
func (s *Server) admitPodPriority(ctx context.Context, res *registry.Resource, pod *corev1.Pod) error {
	var priority int32
	var policy *corev1.PreemptionPolicy
	if pod.Spec.PriorityClassName == "" {
		def, err := s.defaultPriorityClass(ctx)
		if err != nil {
			return fmt.Errorf("failed to get default priority class: %w", err)
		}
		if def != nil {
			pod.Spec.PriorityClassName = def.Name
			priority, policy = def.Value, def.PreemptionPolicy
		} else {
			lower := corev1.PreemptLowerPriority
			policy = &lower
		}
	} else {
		pcRes, _ := s.reg.Lookup(priorityClassesGVR)
		obj, err := s.getObject(ctx, pcRes, "", pod.Spec.PriorityClassName)
		if apierrors.IsNotFound(err) {
			return apierrors.NewForbidden(res.GroupResource(), pod.Name,
				fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		if err != nil {
			return fmt.Errorf("failed to get PriorityClass with name %s: %w", pod.Spec.PriorityClassName, err)
		}
		pc := obj.(*schedulingv1.PriorityClass)
		priority, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return apierrors.NewForbidden(res.GroupResource(), pod.Name,
			fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = &priority
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return apierrors.NewForbidden(res.GroupResource(), pod.Name,
				fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		p := *policy
		pod.Spec.PreemptionPolicy = &p
	}
	return nil
}

// keepPodPriority runs on a pod's update: the priority and policy set at
// create stay when the update leaves them out (a kubectl replace of the
// original manifest); validation refuses any other change to them.
func keepPodPriority(pod, old *corev1.Pod) {
	if pod.Spec.Priority == nil && old.Spec.Priority != nil {
		pod.Spec.Priority = old.Spec.Priority
	}
	if pod.Spec.PreemptionPolicy == nil && old.Spec.PreemptionPolicy != nil {
		pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
	}
}

// admitPriorityClass refuses a second globalDefault class, on create and
// on an update that marks another class default.
func (s *Server) admitPriorityClass(ctx context.Context, res *registry.Resource, pc *schedulingv1.PriorityClass, update bool) error {
	if !pc.GlobalDefault {
		return nil
	}
	def, err := s.defaultPriorityClass(ctx)
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %w", err)
	}
	if def != nil && (!update || def.Name != pc.Name) {
		return apierrors.NewForbidden(res.GroupResource(), pc.Name,
			fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}

// defaultPriorityClass is the globalDefault class; if a race left more
// than one, the lowest, as upstream picks.
func (s *Server) defaultPriorityClass(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	pcRes, _ := s.reg.Lookup(priorityClassesGVR)
	list, err := s.store.List(ctx, s.storageResource(pcRes), "", storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for i := range list.(*schedulingv1.PriorityClassList).Items {
		pc := &list.(*schedulingv1.PriorityClassList).Items[i]
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}

// ensureSystemPriorityClasses creates system-node-critical and
// system-cluster-critical, as upstream's API server does at start.
func (s *Server) ensureSystemPriorityClasses(ctx context.Context) error {
	for _, pc := range validation.SystemPriorityClasses() {
		if err := s.ensure(ctx, priorityClassesGVR, "", pc); err != nil {
			return err
		}
	}
	return nil
}
