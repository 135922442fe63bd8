package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
)

// resourceClient returns the metadata client for the object's resource
// and namespace.
func (gc *GarbageCollector) resourceClient(ref objectReference) (metadata.ResourceInterface, error) {
	r, err := gc.mapper.resourceFor(ref.APIVersion, ref.Kind)
	if err != nil {
		return nil, err
	}
	namespace := ref.Namespace
	if !r.Namespaced {
		namespace = ""
	}
	return gc.metadataClient.Resource(r.GroupVersionResource).Namespace(namespace), nil
}

// getObject reads the object's metadata from the API server.
func (gc *GarbageCollector) getObject(ctx context.Context, ref objectReference) (*metav1.PartialObjectMetadata, error) {
	client, err := gc.resourceClient(ref)
	if err != nil {
		return nil, err
	}
	return client.Get(ctx, ref.Name, metav1.GetOptions{})
}

// deleteObject deletes the object if it is still the one looked at: the
// UID precondition protects a new object of the same name, the
// resourceVersion one an object whose owner references changed since (a
// conflict sends it back through the queue, to decide again).
func (gc *GarbageCollector) deleteObject(ctx context.Context, ref objectReference, resourceVersion string, policy *metav1.DeletionPropagation) error {
	client, err := gc.resourceClient(ref)
	if err != nil {
		return err
	}
	uid := ref.UID
	pre := &metav1.Preconditions{UID: &uid}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	err = client.Delete(ctx, ref.Name, metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: policy})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", ref, err)
	}
	return nil
}

// patchObject patches the object's metadata.
func (gc *GarbageCollector) patchObject(ctx context.Context, ref objectReference, pt types.PatchType, patch []byte) error {
	client, err := gc.resourceClient(ref)
	if err != nil {
		return err
	}
	if _, err := client.Patch(ctx, ref.Name, pt, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch %s: %w", ref, err)
	}
	return nil
}

// objectMetaPatch is the metadata part of a patch.
type objectMetaPatch struct {
	Metadata any `json:"metadata"`
}

// deleteOwnerRefPatch is a strategic merge patch that removes the owner
// references with the given UIDs. The object's own UID rides along: if the
// name now belongs to another object, the API server refuses the patch
// (a UID cannot change) instead of editing the wrong object.
func deleteOwnerRefPatch(dependentUID types.UID, ownerUIDs ...types.UID) []byte {
	refs := make([]map[string]any, 0, len(ownerUIDs))
	for _, uid := range ownerUIDs {
		refs = append(refs, map[string]any{"$patch": "delete", "uid": uid})
	}
	data, _ := json.Marshal(objectMetaPatch{Metadata: map[string]any{"ownerReferences": refs, "uid": dependentUID}})
	return data
}

// unblockOwnerRefsPatch is a strategic merge patch that sets
// blockOwnerDeletion to false on the references that have it.
func unblockOwnerRefsPatch(uid types.UID, owners []metav1.OwnerReference) []byte {
	var refs []map[string]any
	for _, o := range owners {
		if o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
			refs = append(refs, map[string]any{"uid": o.UID, "blockOwnerDeletion": false})
		}
	}
	data, _ := json.Marshal(objectMetaPatch{Metadata: map[string]any{"ownerReferences": refs, "uid": uid}})
	return data
}

// finalizersPatch is a JSON merge patch that sets the finalizers, only if
// the object is still at resourceVersion. An empty list is sent as null,
// which removes the field.
func finalizersPatch(resourceVersion string, finalizers []string) []byte {
	data, _ := json.Marshal(objectMetaPatch{Metadata: map[string]any{"resourceVersion": resourceVersion, "finalizers": finalizers}})
	return data
}

// removeFinalizer removes finalizer from the owner, retrying when the
// owner changed under it. Once the last finalizer of an object being
// deleted is gone, the API server deletes it.
func (gc *GarbageCollector) removeFinalizer(ctx context.Context, owner *node, finalizer string) error {
	identity := owner.getIdentity()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		obj, err := gc.getObject(ctx, identity)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot finalize owner %s, because cannot get it: %w. The garbage collector will retry later", identity, err)
		}
		if obj.GetUID() != identity.UID {
			return nil // another object of the same name: ours is gone
		}
		var kept []string
		found := false
		for _, f := range obj.GetFinalizers() {
			if f == finalizer {
				found = true
				continue
			}
			kept = append(kept, f)
		}
		if !found {
			return nil
		}
		client, err := gc.resourceClient(identity)
		if err != nil {
			return err
		}
		_, err = client.Patch(ctx, identity.Name, types.MergePatchType, finalizersPatch(obj.GetResourceVersion(), kept), metav1.PatchOptions{})
		return err
	})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("updateMaxRetries(%d) has reached. The garbage collector will retry later for owner %v", retry.DefaultBackoff.Steps, identity)
	}
	return err
}
