package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/cluster/apiserver/registry"
	"github.com/klab-dev/klab/cluster/apiserver/storage"
	"github.com/klab-dev/klab/cluster/internal/quota"
)

// The ResourceQuota admission plugin, as upstream's: a new object in a
// namespace with quotas is charged to each quota that constrains it, and
// refused when that would take a quota's usage above its hard limits. The
// charge is written to the quota's status.used before the object is
// stored, so two creates racing for the last unit cannot both have it;
// the resourcequota controller later recounts usage from what exists
// (and gives back what a failed create or a delete left charged).
//
// A quota counts only once the controller has filled in its status: until
// then its status.hard is empty and it constrains nothing, as upstream.

var resourceQuotasGVR = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}

// quotaIgnored are the resources quota never counts (upstream's
// DefaultIgnoredResources).
var quotaIgnored = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// errQuotaMoved: a quota changed between the check and the charge; the
// check runs again on the current one.
var errQuotaMoved = errors.New("quota changed")

// admitQuota charges a new object to its namespace's quotas.
func (s *Server) admitQuota(ctx context.Context, res *registry.Resource, obj runtime.Object, name, namespace string, dryRun bool) error {
	return s.chargeQuota(ctx, res, obj, nil, name, namespace, dryRun)
}

// admitQuotaUpdate charges what an update adds to a Service's usage (a
// ClusterIP Service that becomes a NodePort or LoadBalancer one), as
// upstream's service evaluator; the other kinds' quota usage does not
// change on update.
func (s *Server) admitQuotaUpdate(ctx context.Context, res *registry.Resource, obj, old runtime.Object, dryRun bool) error {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil
	}
	return s.chargeQuota(ctx, res, obj, old, svc.Name, svc.Namespace, dryRun)
}

// chargeQuota charges obj (or, on an update, what it adds to old) to the
// namespace's quotas.
func (s *Server) chargeQuota(ctx context.Context, res *registry.Resource, obj, old runtime.Object, name, namespace string, dryRun bool) error {
	gr := res.GroupResource()
	if !res.Namespaced || namespace == "" || quotaIgnored[gr] {
		return nil
	}
	qRes, _ := s.reg.Lookup(resourceQuotasGVR)
	for attempt := 0; ; attempt++ {
		list, err := s.store.List(ctx, qRes, namespace, storage.ListOptions{})
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("error listing resource quotas: %w", err))
		}
		quotas := list.(*corev1.ResourceQuotaList).Items
		if len(quotas) == 0 {
			return nil
		}
		charges, err := quotaCharges(quotas, gr, obj, old)
		if err != nil {
			return apierrors.NewForbidden(gr, name, err)
		}
		if dryRun || len(charges) == 0 {
			return nil
		}
		err = s.chargeQuotas(ctx, qRes, quotas, charges)
		if errors.Is(err, errQuotaMoved) && attempt < 5 {
			continue
		}
		if _, ok := err.(apierrors.APIStatus); err != nil && !ok {
			return apierrors.NewInternalError(err)
		}
		return err
	}
}

// quotaCharges works out, for each quota (by index) that constrains obj,
// what obj adds to its usage, and refuses obj as upstream's CheckRequest
// does: a container that does not state a constrained resource, a quota
// whose usage is not yet known, or usage that would exceed the hard limit.
func quotaCharges(quotas []corev1.ResourceQuota, gr schema.GroupResource, obj, old runtime.Object) (map[int]corev1.ResourceList, error) {
	var matching []int
	for i := range quotas {
		q := &quotas[i]
		ok, err := quota.Matches(q, gr, obj)
		if err != nil {
			return nil, fmt.Errorf("error matching scopes of quota %s, err: %v", q.Name, err)
		}
		if !ok {
			continue
		}
		restricted := quota.MatchingResources(gr, quota.ResourceNames(q.Status.Hard))
		if err := quota.Constraints(restricted, obj); err != nil {
			return nil, fmt.Errorf("failed quota: %s: %v", q.Name, err)
		}
		var unknown []string
		for _, r := range restricted {
			if _, ok := q.Status.Used[r]; !ok {
				unknown = append(unknown, string(r))
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return nil, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(unknown, ","))
		}
		matching = append(matching, i)
	}
	if len(matching) == 0 {
		return nil, nil
	}
	usage := quota.Usage(gr, obj)
	var negative []string
	for name, q := range usage {
		if q.Sign() < 0 {
			negative = append(negative, string(name))
		}
	}
	if len(negative) > 0 {
		slices.Sort(negative)
		return nil, fmt.Errorf("quota usage is negative for resource(s): %s", strings.Join(negative, ","))
	}
	charges := map[int]corev1.ResourceList{}
	for _, i := range matching {
		charge := usage
		if old != nil {
			// A quota that counted the object before is charged only
			// for what it grows by.
			if was, err := quota.Matches(&quotas[i], gr, old); err == nil && was {
				charge = quota.Subtract(usage, quota.Usage(gr, old))
				for k, v := range charge {
					if v.Sign() < 0 {
						delete(charge, k)
					}
				}
			}
		}
		requested := quota.Mask(quota.RemoveZeros(charge), quota.ResourceNames(quotas[i].Status.Hard))
		if len(requested) == 0 {
			continue
		}
		if err := checkCharge(&quotas[i], requested); err != nil {
			return nil, err
		}
		charges[i] = requested
	}
	return charges, nil
}

// checkCharge refuses requested when it takes q's usage above q's hard
// limits, in upstream's words.
func checkCharge(q *corev1.ResourceQuota, requested corev1.ResourceList) error {
	newUsage := quota.Mask(quota.Add(q.Status.Used, requested), quota.ResourceNames(requested))
	if ok, exceeded := quota.LessThanOrEqual(newUsage, q.Status.Hard); !ok {
		return fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
			quota.String(quota.Mask(requested, exceeded)),
			quota.String(quota.Mask(q.Status.Used, exceeded)),
			quota.String(quota.Mask(q.Status.Hard, exceeded)))
	}
	return nil
}

// chargeQuotas adds each charge to its quota's status.used, each quota
// as it was listed (errQuotaMoved when one has changed since).
func (s *Server) chargeQuotas(ctx context.Context, qRes *registry.Resource, quotas []corev1.ResourceQuota, charges map[int]corev1.ResourceList) error {
	for i, charge := range charges {
		listed := &quotas[i]
		_, err := s.store.GuaranteedUpdate(ctx, qRes, listed.Namespace, listed.Name, func(cur runtime.Object) (runtime.Object, error) {
			q := cur.(*corev1.ResourceQuota).DeepCopy()
			if q.ResourceVersion != listed.ResourceVersion {
				return nil, errQuotaMoved
			}
			q.Status.Used = quota.Add(q.Status.Used, charge)
			return q, nil
		})
		if apierrors.IsNotFound(err) {
			continue // deleted meanwhile: it constrains nothing any more
		}
		if err != nil {
			return err
		}
	}
	return nil
}
