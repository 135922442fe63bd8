package controllerutil

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Event reasons the pod control records on the controller object, as
// upstream's.
const (
	FailedCreatePodReason     = "FailedCreate"
	SuccessfulCreatePodReason = "SuccessfulCreate"
	FailedDeletePodReason     = "FailedDelete"
	SuccessfulDeletePodReason = "SuccessfulDelete"
)

// PodControl creates, deletes and patches the pods of one controller and
// records on the controller object what happened (upstream's
// RealPodControl).
type PodControl struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
}

// CreatePods creates one pod from template, owned by controllerRef and
// named after the owner ("<owner>-" plus a generated suffix).
func (c PodControl) CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference) error {
	return c.CreatePodsWithGenerateName(ctx, namespace, template, owner, controllerRef, "")
}

// CreatePodsWithGenerateName is CreatePods with another generateName
// (an Indexed Job's "<job>-<index>-"); empty keeps the owner's prefix.
func (c PodControl) CreatePodsWithGenerateName(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference, generateName string) error {
	if err := validateControllerRef(controllerRef); err != nil {
		return err
	}
	pod, err := GetPodFromTemplate(template, owner, controllerRef)
	if err != nil {
		return err
	}
	if generateName != "" {
		pod.GenerateName = generateName
	}
	if len(pod.Labels) == 0 {
		return errors.New("unable to create pods, no labels")
	}
	created, err := c.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// Every create in a terminating namespace fails the same way; the
		// namespace controller is about to remove the owner anyway.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.Recorder.Eventf(owner, corev1.EventTypeWarning, FailedCreatePodReason, "Error creating: %v", err)
		}
		return err
	}
	c.Recorder.Eventf(owner, corev1.EventTypeNormal, SuccessfulCreatePodReason, "Created pod: %v", created.Name)
	return nil
}

// DeletePod deletes the named pod of owner. A pod already gone returns the
// NotFound error without an event, so callers can tell it apart.
func (c PodControl) DeletePod(ctx context.Context, namespace, name string, owner runtime.Object) error {
	if err := c.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		c.Recorder.Eventf(owner, corev1.EventTypeWarning, FailedDeletePodReason, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	c.Recorder.Eventf(owner, corev1.EventTypeNormal, SuccessfulDeletePodReason, "Deleted pod: %v", name)
	return nil
}

// PatchPod applies a strategic merge patch to the named pod.
func (c PodControl) PatchPod(ctx context.Context, namespace, name string, data []byte) error {
	_, err := c.Client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	return err
}

// GetPodFromTemplate builds the pod a controller creates: the template's
// labels, annotations, finalizers and spec, the controller reference, and
// a generateName made from the owner's name.
func GetPodFromTemplate(template *corev1.PodTemplateSpec, owner runtime.Object, controllerRef *metav1.OwnerReference) (*corev1.Pod, error) {
	accessor, err := meta.Accessor(owner)
	if err != nil {
		return nil, fmt.Errorf("parentObject does not have ObjectMeta, %w", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Labels:       maps.Clone(template.Labels),
			Annotations:  maps.Clone(template.Annotations),
			GenerateName: podsPrefix(accessor.GetName()),
			Finalizers:   slices.Clone(template.Finalizers),
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if controllerRef != nil {
		pod.OwnerReferences = append(pod.OwnerReferences, *controllerRef)
	}
	return pod, nil
}

// podsPrefix is "<name>-" when that is a valid name prefix (it reads
// better), else the name itself.
func podsPrefix(name string) string {
	prefix := name + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return name
	}
	return prefix
}

func validateControllerRef(ref *metav1.OwnerReference) error {
	switch {
	case ref == nil:
		return errors.New("controllerRef is nil")
	case ref.APIVersion == "":
		return errors.New("controllerRef has empty APIVersion")
	case ref.Kind == "":
		return errors.New("controllerRef has empty Kind")
	case ref.Controller == nil || !*ref.Controller:
		return errors.New("controllerRef.Controller is not set to true")
	case ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion:
		return errors.New("controllerRef.BlockOwnerDeletion is not set")
	}
	return nil
}
