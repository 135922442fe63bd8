package storage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
)

// ListOptions selects what a list or watch returns.
type ListOptions struct {
	Labels labels.Selector
	Fields fields.Selector
	// Limit and Continue page a list, as upstream's chunked lists do.
	Limit    int64
	Continue string
	// ResourceVersion: "" reads the latest state (a linearizable read of
	// etcd); "0" accepts any state (served by the watch cache, or by the
	// etcd member without a quorum round while the cache starts); a number
	// N reads at exactly N when ResourceVersionMatch is Exact, at N or
	// later otherwise (from the watch cache when there is no Limit).
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
}

// Predicate reports whether obj passes the label and field selectors.
type Predicate struct {
	res    *registry.Resource
	labels labels.Selector
	fields fields.Selector
}

// NewPredicate checks the selectors against what res supports: a field
// selector may only name the fields upstream supports for the resource.
func NewPredicate(res *registry.Resource, ls labels.Selector, fs fields.Selector) (*Predicate, error) {
	if ls == nil {
		ls = labels.Everything()
	}
	if fs == nil {
		fs = fields.Everything()
	}
	if !fs.Empty() {
		sample := FieldSet(res, res.New())
		for _, r := range fs.Requirements() {
			if _, ok := sample[r.Field]; !ok {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
			}
		}
	}
	return &Predicate{res: res, labels: ls, fields: fs}, nil
}

// Empty reports whether the predicate accepts everything.
func (p *Predicate) Empty() bool { return p.labels.Empty() && p.fields.Empty() }

// Matches reports whether obj passes.
func (p *Predicate) Matches(obj runtime.Object) bool {
	if p.Empty() {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if !p.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	return p.fields.Empty() || p.fields.Matches(FieldSet(p.res, obj))
}

// matchesAttrs is Matches on attributes computed beforehand: the watch
// cache computes an object's labels and fields once for all watchers.
func (p *Predicate) matchesAttrs(ls labels.Set, fs fields.Set) bool {
	if !p.labels.Empty() && !p.labels.Matches(ls) {
		return false
	}
	return p.fields.Empty() || p.fields.Matches(fs)
}

// FieldSet returns the fields a field selector may name on obj.
func FieldSet(res *registry.Resource, obj runtime.Object) fields.Set {
	set := fields.Set{}
	if m, err := meta.Accessor(obj); err == nil {
		set["metadata.name"] = m.GetName()
		if res.Namespaced {
			set["metadata.namespace"] = m.GetNamespace()
		}
	}
	if res.FieldLabels != nil {
		for k, v := range res.FieldLabels(obj) {
			set[k] = v
		}
	}
	return set
}

// continueToken is upstream's continue token: the list's revision and the
// key (relative to the listed prefix) to start the next page at.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(rev int64, nextKey, prefix string) (string, error) {
	data, err := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rev, StartKey: strings.TrimPrefix(nextKey, prefix)})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(data), nil
}

func decodeContinue(token, prefix string) (rev int64, startKey string, err error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", fmt.Errorf("continue key is not valid: %v", err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, "", fmt.Errorf("continue key is not valid: %v", err)
	}
	if c.APIVersion != "meta.k8s.io/v1" {
		return 0, "", fmt.Errorf("continue key is not valid: server does not recognize this encoded version %q", c.APIVersion)
	}
	if c.ResourceVersion == 0 || strings.Contains(c.StartKey, "..") || strings.HasPrefix(c.StartKey, "/") {
		return 0, "", fmt.Errorf("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	return c.ResourceVersion, prefix + c.StartKey, nil
}

// List returns the objects of res in namespace ("" for all) that opts
// select, as a typed list whose resourceVersion is the etcd revision it was
// read at. A list that accepts a stale state is answered from the watch
// cache; its items may be shared with watches and must not be changed.
func (s *Store) List(ctx context.Context, res *registry.Resource, namespace string, opts ListOptions) (runtime.Object, error) {
	pred, err := NewPredicate(res, opts.Labels, opts.Fields)
	if err != nil {
		return nil, err
	}
	if minRev, ok := servedFromCache(opts); ok {
		if c := s.cacherFor(res, 0); c != nil {
			list, err := c.list(ctx, res.Prefix(namespace), pred, minRev)
			if err != errCacheNotReady {
				return list, err
			}
			// The cache is still listing: etcd answers meanwhile.
		}
	}
	prefix := res.Prefix(namespace)
	start := prefix
	var rev int64
	var readOpts []clientv3.OpOption
	switch {
	case opts.Continue != "":
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		rev, start, err = decodeContinue(opts.Continue, prefix)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		readOpts = append(readOpts, clientv3.WithRev(rev))
	case opts.ResourceVersion == "":
	case opts.ResourceVersion == "0":
		readOpts = append(readOpts, clientv3.WithSerializable())
	default:
		want, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
		if err != nil || want < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", opts.ResourceVersion))
		}
		if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
			rev = want
			readOpts = append(readOpts, clientv3.WithRev(rev))
		}
	}

	list := res.NewList()
	var items []runtime.Object
	end := clientv3.GetPrefixRangeEnd(prefix)
	pageSize := opts.Limit
	var remaining int64
	next := ""
	for {
		ops := append([]clientv3.OpOption{clientv3.WithRange(end)}, readOpts...)
		if pageSize > 0 {
			ops = append(ops, clientv3.WithLimit(pageSize))
		}
		resp, err := s.cli.Get(ctx, start, ops...)
		if err != nil {
			if err == rpctypes.ErrCompacted {
				if opts.Continue != "" {
					return nil, apierrors.NewResourceExpired(continueExpiredMessage)
				}
				return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", rev))
			}
			return nil, etcdError(err)
		}
		if rev == 0 {
			// Pin every further page to the revision of the first.
			rev = resp.Header.Revision
			readOpts = append(readOpts, clientv3.WithRev(rev))
		}
		full := false
		for i, kv := range resp.Kvs {
			obj, err := s.decodeKV(res, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, err
			}
			if !pred.Matches(obj) {
				continue
			}
			items = append(items, obj)
			if opts.Limit > 0 && int64(len(items)) == opts.Limit {
				if i < len(resp.Kvs)-1 || resp.More {
					next = string(kv.Key) + "\x00"
					remaining = resp.Count - int64(i+1)
				}
				full = true
				break
			}
		}
		if full || !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		// A filtered page came back short: fetch more, as upstream does,
		// growing the page so a sparse selector does not crawl.
		if pageSize < 10000 {
			pageSize *= 2
		}
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	lm.SetResourceVersion(strconv.FormatInt(rev, 10))
	if next != "" {
		token, err := encodeContinue(rev, next, prefix)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		lm.SetContinue(token)
		if pred.Empty() && remaining > 0 {
			lm.SetRemainingItemCount(&remaining)
		}
	}
	return list, nil
}

// servedFromCache reports whether a list may be answered by the watch
// cache, and the revision the answer must not be older than. As upstream:
// resourceVersion "0" (any state, where a limit is ignored), or N with
// resourceVersionMatch NotOlderThan (or unset) and no limit; consistent
// (""), exact and continued lists read etcd.
func servedFromCache(opts ListOptions) (int64, bool) {
	if opts.Continue != "" || opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		return 0, false
	}
	switch opts.ResourceVersion {
	case "":
		return 0, false
	case "0":
		return 0, true
	}
	rev, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil || rev <= 0 || opts.Limit > 0 {
		return 0, false
	}
	return rev, true
}

// CurrentRevision returns etcd's current revision (a linearizable read).
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	resp, err := s.cli.Get(ctx, "/registry/klab-revision-probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, etcdError(err)
	}
	return resp.Header.Revision, nil
}

const continueExpiredMessage = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
