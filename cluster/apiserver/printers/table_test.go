package printers

import (
	"errors"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestColumns(t *testing.T) {
	tests := []struct {
		obj  runtime.Object
		want []string // wide columns end in "*"
	}{
		{&corev1.Pod{}, []string{"Name", "Ready", "Status", "Restarts", "Age", "IP*", "Node*", "Nominated Node*", "Readiness Gates*"}},
		{&corev1.Node{}, []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP*", "External-IP*", "OS-Image*", "Kernel-Version*", "Container-Runtime*"}},
		{&corev1.Namespace{}, []string{"Name", "Status", "Age"}},
		{&corev1.Service{}, []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"}},
		{&corev1.Endpoints{}, []string{"Name", "Endpoints", "Age"}},
		{&corev1.ConfigMap{}, []string{"Name", "Data", "Age"}},
		{&corev1.Secret{}, []string{"Name", "Type", "Data", "Age"}},
		{&corev1.ServiceAccount{}, []string{"Name", "Secrets", "Age"}},
		{&corev1.Event{}, []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"}},
		{&eventsv1.Event{}, []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"}},
		{&appsv1.Deployment{}, []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*"}},
		{&appsv1.ReplicaSet{}, []string{"Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"}},
		{&appsv1.DaemonSet{}, []string{"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers*", "Images*", "Selector*"}},
		{&batchv1.Job{}, []string{"Name", "Status", "Completions", "Duration", "Age", "Containers*", "Images*", "Selector*"}},
		{&coordinationv1.Lease{}, []string{"Name", "Holder", "Age"}},
		{&discoveryv1.EndpointSlice{}, []string{"Name", "AddressType", "Ports", "Endpoints", "Age"}},
		{&rbacv1.Role{}, []string{"Name", "Created At"}},
	}
	for _, tt := range tests {
		t.Run(reflect.TypeOf(tt.obj).Elem().String(), func(t *testing.T) {
			table, err := Table(tt.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := columnNames(table.ColumnDefinitions); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("columns\n got: %q\nwant: %q", got, tt.want)
			}
		})
	}
}

// TestEveryPrinterFillsItsColumns checks each printer against its own column
// definitions: one cell per column, int64 in integer columns, a string
// elsewhere, and a NAME column formatted as a name.
func TestEveryPrinterFillsItsColumns(t *testing.T) {
	for typ := range handlers {
		t.Run(typ.Elem().String(), func(t *testing.T) {
			obj := reflect.New(typ.Elem()).Interface().(runtime.Object)
			table, err := Table(obj, now)
			if err != nil {
				t.Fatal(err)
			}
			columns, cells := table.ColumnDefinitions, table.Rows[0].Cells
			if len(cells) != len(columns) {
				t.Fatalf("%d cells for %d columns", len(cells), len(columns))
			}
			named := false
			for i, c := range columns {
				switch c.Type {
				case "integer":
					if _, ok := cells[i].(int64); !ok {
						t.Errorf("column %q: cell %#v is not an int64", c.Name, cells[i])
					}
				case "boolean":
					// Upstream's CronJob SUSPEND is a boolean column whose
					// cell is printBoolPtr's text; PriorityClass's
					// GLOBAL-DEFAULT is the bool itself.
					if _, isBool := cells[i].(bool); isBool {
						break
					}
					if v, _ := cells[i].(string); v != "True" && v != "False" && v != "<unset>" {
						t.Errorf("column %q: cell %#v is not True, False or <unset>", c.Name, cells[i])
					}
				case "date":
					if _, ok := cells[i].(string); !ok {
						t.Errorf("column %q: cell %#v is not a timestamp string", c.Name, cells[i])
					}
				case "string":
					_, isString := cells[i].(string)
					_, isInt := cells[i].(int64)
					if !isString && !(isInt && intCellInStringColumn[c.Name]) {
						t.Errorf("column %q: cell %#v is not a string", c.Name, cells[i])
					}
				default:
					t.Errorf("column %q has type %q", c.Name, c.Type)
				}
				if c.Description == "" {
					t.Errorf("column %q has no description", c.Name)
				}
				if c.Name == "Name" {
					named = c.Format == "name"
				}
			}
			if !named {
				t.Error(`no "Name" column with format "name"`)
			}
		})
	}
}

// intCellInStringColumn are the columns upstream declares "string" but fills
// with a number; kubectl prints either the same way.
var intCellInStringColumn = map[string]bool{
	"Up-to-date": true, "Available": true, "Data": true, "Secrets": true, "Count": true, "Revision": true,
}

func TestListRowsInOrder(t *testing.T) {
	list := &corev1.ConfigMapList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next-page", RemainingItemCount: ptr(int64(7))},
		Items: []corev1.ConfigMap{
			{ObjectMeta: objectMeta("zeta", time.Minute)},
			{ObjectMeta: objectMeta("alpha", time.Minute)},
			{ObjectMeta: objectMeta("mid", time.Minute)},
		},
	}
	table, err := Table(list, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []any
	for _, row := range table.Rows {
		names = append(names, row.Cells[0])
		if row.Object.Object != nil || row.Object.Raw != nil {
			t.Errorf("row %v has an object; the caller fills it", row.Cells[0])
		}
	}
	assertCells(t, names, []any{"zeta", "alpha", "mid"})
	if got := columnNames(table.ColumnDefinitions); !reflect.DeepEqual(got, []string{"Name", "Data", "Age"}) {
		t.Errorf("columns = %q", got)
	}
	if table.ResourceVersion != "42" || table.Continue != "next-page" || table.RemainingItemCount == nil || *table.RemainingItemCount != 7 {
		t.Errorf("list meta = %+v, want resourceVersion 42, continue next-page, 7 remaining", table.ListMeta)
	}
	if table.APIVersion != "meta.k8s.io/v1" || table.Kind != "Table" {
		t.Errorf("type meta = %+v", table.TypeMeta)
	}
}

func TestSingleObjectOneRow(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: objectMeta("settings", time.Minute)}
	cm.ResourceVersion = "17"
	table, err := Table(cm, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(table.Rows))
	}
	if table.ResourceVersion != "17" {
		t.Errorf("resourceVersion = %q, want the object's 17", table.ResourceVersion)
	}
}

func TestEmptyListKeepsColumns(t *testing.T) {
	table, err := Table(&corev1.PodList{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if table.Rows == nil || len(table.Rows) != 0 {
		t.Errorf("rows = %#v, want an empty list (JSON [], as upstream)", table.Rows)
	}
	if len(table.ColumnDefinitions) != len(podColumns) || table.ColumnDefinitions[1].Name != "Ready" {
		t.Errorf("columns = %q, want the pod columns", columnNames(table.ColumnDefinitions))
	}
}

func TestDefaultTable(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, time.April, 30, 9, 30, 0, 0, time.FixedZone("KST", 9*3600)))
	role := rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", CreationTimestamp: created}}
	other := rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "writer"}}
	unknown := &unstructured.Unstructured{}
	unknown.SetName("thing")
	unknown.SetCreationTimestamp(created)

	tests := []struct {
		name string
		obj  runtime.Object
		want [][]any
	}{
		{name: "object", obj: &role, want: [][]any{{"reader", "2026-04-30T00:30:00Z"}}},
		{name: "list", obj: &rbacv1.RoleList{Items: []rbacv1.Role{role, other}}, want: [][]any{
			{"reader", "2026-04-30T00:30:00Z"}, {"writer", "0001-01-01T00:00:00Z"},
		}},
		{name: "unstructured", obj: unknown, want: [][]any{{"thing", "2026-04-30T00:30:00Z"}}},
		{name: "unstructured list", obj: &unstructured.UnstructuredList{Items: []unstructured.Unstructured{*unknown}}, want: [][]any{{"thing", "2026-04-30T00:30:00Z"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Table(tt.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			want := []metav1.TableColumnDefinition{
				{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
				{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
			}
			if !reflect.DeepEqual(table.ColumnDefinitions, want) {
				t.Errorf("columns = %+v", table.ColumnDefinitions)
			}
			var got [][]any
			for _, row := range table.Rows {
				got = append(got, row.Cells)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rows = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTableErrors(t *testing.T) {
	tests := []struct {
		name    string
		obj     runtime.Object
		notable bool
	}{
		{name: "nil", obj: nil},
		{name: "typed nil", obj: (*corev1.Pod)(nil)},
		{name: "no object metadata", obj: &metav1.Status{Status: metav1.StatusFailure}, notable: true},
		{name: "list item without object metadata", obj: &metav1.List{Items: []runtime.RawExtension{{Object: &metav1.Status{}}}}, notable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Table(tt.obj, now)
			if err == nil {
				t.Fatalf("no error, table %+v", table)
			}
			if got := errors.Is(err, ErrNotTable); got != tt.notable {
				t.Errorf("errors.Is(%q, ErrNotTable) = %v, want %v", err, got, tt.notable)
			}
		})
	}
}

func TestTablesDoNotShareColumns(t *testing.T) {
	first, err := Table(&corev1.Pod{}, now)
	if err != nil {
		t.Fatal(err)
	}
	first.ColumnDefinitions[0].Name = "changed"
	second, err := Table(&corev1.PodList{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if second.ColumnDefinitions[0].Name != "Name" {
		t.Errorf("editing one table's columns changed the next: %q", second.ColumnDefinitions[0].Name)
	}
}
