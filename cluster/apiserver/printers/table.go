package printers

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ErrNotTable is returned, wrapped in a message naming the object's type, when
// an object of a type without a printer has no object metadata either, so not
// even the default table can describe it. kube-apiserver answers such a request
// with 406 Not Acceptable.
var ErrNotTable = errors.New("does not support being converted to a Table")

// handler prints one type: its columns, and the row of one object. The row's
// Object is left empty; Table's caller fills it as the request asks.
type handler struct {
	columns []metav1.TableColumnDefinition
	row     func(obj runtime.Object, now time.Time) metav1.TableRow
}

// typed adapts a printer of one concrete type to a handler.
func typed[T runtime.Object](columns []metav1.TableColumnDefinition, row func(T, time.Time) metav1.TableRow) handler {
	return handler{
		columns: columns,
		row:     func(obj runtime.Object, now time.Time) metav1.TableRow { return row(obj.(T), now) },
	}
}

// handlers holds a printer per object type. A list is printed with the handler
// of its items' type, so an empty PodList still gets the pod columns.
var handlers = map[reflect.Type]handler{
	reflect.TypeFor[*corev1.Namespace]():                         typed(namespaceColumns, printNamespace),
	reflect.TypeFor[*corev1.Node]():                              typed(nodeColumns, printNode),
	reflect.TypeFor[*corev1.Pod]():                               typed(podColumns, printPod),
	reflect.TypeFor[*corev1.Service]():                           typed(serviceColumns, printService),
	reflect.TypeFor[*corev1.Endpoints]():                         typed(endpointsColumns, printEndpoints),
	reflect.TypeFor[*corev1.ConfigMap]():                         typed(configMapColumns, printConfigMap),
	reflect.TypeFor[*corev1.Secret]():                            typed(secretColumns, printSecret),
	reflect.TypeFor[*corev1.ServiceAccount]():                    typed(serviceAccountColumns, printServiceAccount),
	reflect.TypeFor[*corev1.ResourceQuota]():                     typed(resourceQuotaColumns, printResourceQuota),
	reflect.TypeFor[*corev1.LimitRange]():                        typed(limitRangeColumns, printLimitRange),
	reflect.TypeFor[*corev1.ReplicationController]():             typed(replicationControllerColumns, printReplicationController),
	reflect.TypeFor[*corev1.PodTemplate]():                       typed(podTemplateColumns, printPodTemplate),
	reflect.TypeFor[*corev1.Event]():                             typed(eventColumns, printCoreEvent),
	reflect.TypeFor[*eventsv1.Event]():                           typed(eventColumns, printEventsEvent),
	reflect.TypeFor[*appsv1.Deployment]():                        typed(deploymentColumns, printDeployment),
	reflect.TypeFor[*appsv1.ReplicaSet]():                        typed(replicaSetColumns, printReplicaSet),
	reflect.TypeFor[*appsv1.DaemonSet]():                         typed(daemonSetColumns, printDaemonSet),
	reflect.TypeFor[*appsv1.StatefulSet]():                       typed(statefulSetColumns, printStatefulSet),
	reflect.TypeFor[*appsv1.ControllerRevision]():                typed(controllerRevisionColumns, printControllerRevision),
	reflect.TypeFor[*batchv1.Job]():                              typed(jobColumns, printJob),
	reflect.TypeFor[*batchv1.CronJob]():                          typed(cronJobColumns, printCronJob),
	reflect.TypeFor[*autoscalingv2.HorizontalPodAutoscaler]():    typed(hpaColumns, printHPA),
	reflect.TypeFor[*autoscalingv1.HorizontalPodAutoscaler]():    typed(hpaColumns, printHPAV1),
	reflect.TypeFor[*coordinationv1.Lease]():                     typed(leaseColumns, printLease),
	reflect.TypeFor[*discoveryv1.EndpointSlice]():                typed(endpointSliceColumns, printEndpointSlice),
	reflect.TypeFor[*policyv1.PodDisruptionBudget]():             typed(podDisruptionBudgetColumns, printPodDisruptionBudget),
	reflect.TypeFor[*schedulingv1.PriorityClass]():               typed(priorityClassColumns, printPriorityClass),
	reflect.TypeFor[*rbacv1.Role]():                              typed(roleColumns, printRole),
	reflect.TypeFor[*rbacv1.ClusterRole]():                       typed(roleColumns, printClusterRole),
	reflect.TypeFor[*rbacv1.RoleBinding]():                       typed(roleBindingColumns, printRoleBinding),
	reflect.TypeFor[*rbacv1.ClusterRoleBinding]():                typed(roleBindingColumns, printClusterRoleBinding),
	reflect.TypeFor[*certificatesv1.CertificateSigningRequest](): typed(csrColumns, printCSR),
}

// Table converts obj — a typed object (e.g. *corev1.Pod) or a typed list
// (*corev1.PodList) — into a Table with upstream's column definitions for that
// type (Priority 1 for the columns only `-o wide` shows) and one row per
// object, in list order. Row.Object is left empty (the caller fills it). now is
// used for AGE etc.
//
// Every row holds the cells of every column, as kube-apiserver's rows do;
// kubectl drops the Priority 1 ones itself unless asked for wide output. The
// Table's list metadata (resourceVersion, continue, remainingItemCount) is
// copied from a list, and the resourceVersion from a single object.
func Table(obj runtime.Object, now time.Time) (*metav1.Table, error) {
	if isNil(obj) {
		return nil, errors.New("convert to table: no object")
	}
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}}

	if meta.IsListType(obj) {
		h := listHandler(obj)
		table.ColumnDefinitions = h.columnDefinitions()
		if h != nil {
			// Upstream's printers answer an empty list with "rows": [], its
			// default table with "rows": null; keep both.
			table.Rows = make([]metav1.TableRow, 0, meta.LenList(obj))
		}
		err := meta.EachListItem(obj, func(item runtime.Object) error {
			row, err := h.print(item, now)
			if err != nil {
				return err
			}
			table.Rows = append(table.Rows, row)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("convert %T to table: %w", obj, err)
		}
	} else {
		h := handlerFor(reflect.TypeOf(obj))
		table.ColumnDefinitions = h.columnDefinitions()
		row, err := h.print(obj, now)
		if err != nil {
			return nil, fmt.Errorf("convert to table: %w", err)
		}
		table.Rows = []metav1.TableRow{row}
	}

	if list, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = list.GetResourceVersion()
		table.Continue = list.GetContinue()
		table.RemainingItemCount = list.GetRemainingItemCount()
	} else if object, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = object.GetResourceVersion()
	}
	return table, nil
}

// handlerFor returns the handler of objects of type t, or nil when the type
// has none and gets the default table.
func handlerFor(t reflect.Type) *handler {
	if h, ok := handlers[t]; ok {
		return &h
	}
	return nil
}

// columnDefinitions returns a copy of h's columns (the default table's for a
// nil h), so that a caller editing its Table cannot change the next one.
func (h *handler) columnDefinitions() []metav1.TableColumnDefinition {
	if h == nil {
		return defaultColumns()
	}
	return slices.Clone(h.columns)
}

// print prints one object with h, or as the default table does for a nil h.
func (h *handler) print(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
	if h == nil {
		return defaultRow(obj)
	}
	return h.row(obj, now), nil
}

// listHandler finds the handler for the items of a typed list. A list whose
// items have no printer, or may be of any type (metav1.List), gets nil: the
// default table, which needs nothing but object metadata.
func listHandler(list runtime.Object) *handler {
	items, err := meta.GetItemsPtr(list)
	if err != nil {
		return nil
	}
	t := reflect.TypeOf(items)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Slice {
		return nil
	}
	item := t.Elem().Elem()
	if item.Kind() != reflect.Pointer {
		item = reflect.PointerTo(item)
	}
	return handlerFor(item)
}

// isNil reports a nil interface or a typed nil pointer.
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// defaultColumns are the columns of the apiserver library's default table
// convertor, used for every type without a printer of its own.
func defaultColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]},
		{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
	}
}

// defaultRow is the default table's row: the name, and the creation time in
// RFC 3339, UTC (a "date" cell, which kubectl shows as an age).
func defaultRow(obj runtime.Object) (metav1.TableRow, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return metav1.TableRow{}, fmt.Errorf("the resource %s %w", kindOf(obj), ErrNotTable)
	}
	return metav1.TableRow{Cells: []any{
		m.GetName(),
		m.GetCreationTimestamp().UTC().Format(time.RFC3339),
	}}, nil
}

// kindOf names obj's kind for an error: its TypeMeta kind when set, else its
// Go type's name.
func kindOf(obj runtime.Object) string {
	if kind := obj.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind
	}
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
