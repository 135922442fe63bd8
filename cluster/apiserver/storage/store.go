// Package storage keeps Kubernetes objects in etcd, the way kube-apiserver's
// etcd3 storage does: one key per object under /registry, the object's
// resourceVersion is the etcd revision that last wrote it, every update is
// an etcd transaction that only succeeds if the key still has the revision
// the update was computed from, and a watch is an etcd watch on the
// resource's prefix whose events are turned into Kubernetes watch events.
//
// It talks to etcd only through the real client (go.etcd.io/etcd/client/v3),
// so it works against klab's own members and against upstream etcd alike.
package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// Store reads and writes objects in etcd.
type Store struct {
	cli *clientv3.Client
}

// New returns a store using cli.
func New(cli *clientv3.Client) *Store { return &Store{cli: cli} }

// Client returns the etcd client the store uses.
func (s *Store) Client() *clientv3.Client { return s.cli }

// Get returns the named object.
func (s *Store) Get(ctx context.Context, res *registry.Resource, namespace, name string) (runtime.Object, error) {
	resp, err := s.cli.Get(ctx, res.Key(namespace, name))
	if err != nil {
		return nil, etcdError(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, apierrors.NewNotFound(res.GroupResource(), name)
	}
	return s.decodeKV(res, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// Create stores obj, which must not exist yet, and returns it as stored,
// with its resourceVersion.
func (s *Store) Create(ctx context.Context, res *registry.Resource, obj runtime.Object) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	data, err := encode(obj, res.GroupVersion())
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	key := res.Key(m.GetNamespace(), m.GetName())
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	if err != nil {
		return nil, etcdError(err)
	}
	if !resp.Succeeded {
		return nil, apierrors.NewAlreadyExists(res.GroupResource(), m.GetName())
	}
	return s.decodeKV(res, data, resp.Header.Revision)
}

// UpdateFunc computes the new object from the current one. It gets a copy
// it may change and return. Returning an error aborts the update with it.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// GuaranteedUpdate applies tryUpdate to the current object and writes the
// result if the object is still at the revision it was read at; if somebody
// wrote in between, it reads the object again and retries. A caller that
// needs "fail if changed" (an update carrying a resourceVersion) checks the
// version inside tryUpdate and returns a Conflict. An update that changes
// nothing is not written, as upstream.
func (s *Store) GuaranteedUpdate(ctx context.Context, res *registry.Resource, namespace, name string, tryUpdate UpdateFunc) (runtime.Object, error) {
	key := res.Key(namespace, name)
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return nil, etcdError(err)
	}
	for {
		if len(resp.Kvs) == 0 {
			return nil, apierrors.NewNotFound(res.GroupResource(), name)
		}
		kv := resp.Kvs[0]
		current, err := s.decodeKV(res, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		updated, err := tryUpdate(current.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(updated)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		m.SetResourceVersion("")
		data, err := encode(updated, res.GroupVersion())
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if bytes.Equal(data, kv.Value) { // stored objects carry no resourceVersion
			return current, nil
		}
		txn, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, string(data))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return nil, etcdError(err)
		}
		if txn.Succeeded {
			return s.decodeKV(res, data, txn.Header.Revision)
		}
		// Somebody else wrote first: compute the update again on top of
		// what they wrote.
		resp = (*clientv3.GetResponse)(txn.Responses[0].GetResponseRange())
	}
}

// Precondition checks the current object before a delete.
type Precondition func(current runtime.Object) error

// Delete removes the named object if precondition (which may be nil)
// accepts it, and returns the object as it was, at the deletion's revision.
func (s *Store) Delete(ctx context.Context, res *registry.Resource, namespace, name string, precondition Precondition) (runtime.Object, error) {
	key := res.Key(namespace, name)
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return nil, etcdError(err)
	}
	for {
		if len(resp.Kvs) == 0 {
			return nil, apierrors.NewNotFound(res.GroupResource(), name)
		}
		kv := resp.Kvs[0]
		current, err := s.decodeKV(res, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		if precondition != nil {
			if err := precondition(current); err != nil {
				return nil, err
			}
		}
		txn, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(key)).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return nil, etcdError(err)
		}
		if txn.Succeeded {
			setResourceVersion(current, txn.Header.Revision)
			return current, nil
		}
		resp = (*clientv3.GetResponse)(txn.Responses[0].GetResponseRange())
	}
}

// decodeKV decodes a stored object and gives it its resourceVersion.
func (s *Store) decodeKV(res *registry.Resource, data []byte, rev int64) (runtime.Object, error) {
	obj := res.New()
	if err := decode(data, obj); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decode %s from etcd: %w", res.Resource, err))
	}
	setResourceVersion(obj, rev)
	return obj, nil
}

func setResourceVersion(obj runtime.Object, rev int64) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
}

// etcdError turns an etcd client error into an API error: an unreachable
// or quorum-less etcd is a timeout the client may retry, as upstream
// reports it.
func etcdError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return apierrors.NewTimeoutError(fmt.Sprintf("etcd did not answer in time: %v", err), 2)
	}
	return apierrors.NewInternalError(fmt.Errorf("etcd: %w", err))
}
