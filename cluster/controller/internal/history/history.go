// Package history keeps the revision history of the controllers that
// record one in ControllerRevisions, the DaemonSet and StatefulSet
// controllers, after upstream's pkg/controller/history.
//
// A ControllerRevision is an immutable snapshot of what a controller's
// template was: its data is a strategic merge patch that, applied to the
// owner, puts that template back (which is exactly what `kubectl rollout
// undo` does with it), and its revision number orders the history. A
// template that comes back after a change is not snapshotted again: the
// revision that already holds it is given the next number instead, so
// the history lists each distinct template once.
package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/util/retry"
)

// ControllerRevisionHashLabel holds the hash of a revision's data, which
// makes comparing two revisions cheap. Upstream's name.
const ControllerRevisionHashLabel = "controller.kubernetes.io/hash"

// maxPrefixLength keeps a revision's name within the 253 characters of a
// DNS subdomain: the prefix, a dash and a hash of at most 10 characters
// (upstream's number, which leaves a little room over).
const maxPrefixLength = 223

// Name returns the name of the revision of prefix (the owner's name) with
// hash: "<prefix>-<hash>", the prefix cut to 223 characters.
func Name(prefix, hash string) string {
	if len(prefix) > maxPrefixLength {
		prefix = prefix[:maxPrefixLength]
	}
	return prefix + "-" + hash
}

// New returns a revision of parent (of parentKind) holding data, numbered
// revision, labelled with the template's labels and the data's hash,
// named after the hash (with collisionCount in it, so that a collision
// can be resolved by raising the count). It is not stored yet.
func New(parent metav1.Object, parentKind schema.GroupVersionKind, templateLabels map[string]string, data []byte, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	labels := make(map[string]string, len(templateLabels)+1)
	for k, v := range templateLabels {
		labels[k] = v
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       parent.GetNamespace(),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, parentKind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}
	hash := Hash(cr, collisionCount)
	cr.Name = Name(parent.GetName(), hash)
	cr.Labels[ControllerRevisionHashLabel] = hash
	return cr
}

// Hash returns the hash of a revision's data: FNV-32 over the raw bytes,
// then the decimal probe (the collision count) if there is one, rendered
// through rand.SafeEncodeString as every controller hash is.
func Hash(cr *appsv1.ControllerRevision, probe *int32) string {
	hf := fnv.New32()
	hf.Write(cr.Data.Raw)
	if probe != nil {
		hf.Write([]byte(strconv.FormatInt(int64(*probe), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
}

// Sort orders revisions by number, oldest first; equal numbers by
// creation time, then name.
func Sort(revisions []*appsv1.ControllerRevision) {
	sort.SliceStable(revisions, func(i, j int) bool {
		a, b := revisions[i], revisions[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

// Equal reports whether two revisions hold the same data (both nil counts
// as equal). Differing hash labels settle it without comparing the data.
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	ha, oka := a.Labels[ControllerRevisionHashLabel]
	hb, okb := b.Labels[ControllerRevisionHashLabel]
	if oka && okb && ha != hb {
		return false
	}
	return bytes.Equal(a.Data.Raw, b.Data.Raw)
}

// FindEqual returns the revisions equal to needle, in their order.
func FindEqual(revisions []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var eq []*appsv1.ControllerRevision
	for _, cr := range revisions {
		if Equal(cr, needle) {
			eq = append(eq, cr)
		}
	}
	return eq
}

// Next returns the number the next revision gets: one more than the
// highest of revisions (sorted), or 1 for the first.
func Next(sorted []*appsv1.ControllerRevision) int64 {
	if len(sorted) == 0 {
		return 1
	}
	return sorted[len(sorted)-1].Revision + 1
}

// TemplatePatch returns what a revision of obj (a DaemonSet or a
// StatefulSet) holds: a strategic merge patch that replaces the whole
// spec.template, as upstream's getPatch builds it. Applied to the owner it
// restores the template; nothing else of the spec is recorded, so a
// rollback never changes replicas or the update strategy.
func TemplatePatch(obj runtime.Object) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	spec, _ := fields["spec"].(map[string]any)
	template, ok := spec["template"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%T has no spec.template", obj)
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// Client stores revisions through the API server and lists them from an
// informer's cache.
type Client struct {
	Client kubernetes.Interface
	Lister appslisters.ControllerRevisionLister
}

// Create stores revision as parent's. A name already taken by a revision
// with the same data is that revision (an earlier sync made it); taken by
// other data, it is a hash collision: collisionCount is raised and the
// revision renamed until a free name is found.
func (c Client) Create(ctx context.Context, parent metav1.Object, revision *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, fmt.Errorf("collisionCount should not be nil")
	}
	clone := revision.DeepCopy()
	revisions := c.Client.AppsV1().ControllerRevisions(parent.GetNamespace())
	for {
		hash := Hash(revision, collisionCount)
		clone.Name = Name(parent.GetName(), hash)
		clone.Labels[ControllerRevisionHashLabel] = hash
		created, err := revisions.Create(ctx, clone, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		exists, err := revisions.Get(ctx, clone.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if bytes.Equal(exists.Data.Raw, clone.Data.Raw) {
			return exists, nil
		}
		*collisionCount++
	}
}

// Renumber gives revision the number newRevision (a rollback to it makes
// it the newest), retrying on conflict with the cache's copy.
func (c Client) Renumber(ctx context.Context, revision *appsv1.ControllerRevision, newRevision int64) (*appsv1.ControllerRevision, error) {
	clone := revision.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if clone.Revision == newRevision {
			return nil
		}
		clone.Revision = newRevision
		updated, err := c.Client.AppsV1().ControllerRevisions(clone.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
		if err == nil {
			clone = updated
			return nil
		}
		if cached, getErr := c.Lister.ControllerRevisions(clone.Namespace).Get(clone.Name); getErr == nil {
			clone = cached.DeepCopy() // never mutate the cache's copy
		}
		return err
	})
	return clone, err
}

// Delete removes revision.
func (c Client) Delete(ctx context.Context, revision *appsv1.ControllerRevision) error {
	err := c.Client.AppsV1().ControllerRevisions(revision.Namespace).Delete(ctx, revision.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
