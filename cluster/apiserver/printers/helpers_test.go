package printers

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// now is the fixed clock of every test.
var now = time.Date(2026, time.May, 1, 12, 0, 0, 0, time.UTC)

// ago is a timestamp d before now.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// agoPtr is ago for optional timestamps.
func agoPtr(d time.Duration) *metav1.Time {
	t := ago(d)
	return &t
}

// ptr returns a pointer to v, for optional fields.
func ptr[T any](v T) *T { return &v }

// objectMeta names an object created the given time ago.
func objectMeta(name string, created time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(created)}
}

// withLabels sets labels on m.
func withLabels(m metav1.ObjectMeta, labels map[string]string) metav1.ObjectMeta {
	m.Labels = labels
	return m
}

// rowCells converts obj and returns its only row's cells.
func rowCells(t *testing.T, obj runtime.Object) []any {
	t.Helper()
	table, err := Table(obj, now)
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("got %d rows, want 1", len(table.Rows))
	}
	return table.Rows[0].Cells
}

// assertCells compares cells, value and Go type alike (integer columns hold
// int64, the rest strings).
func assertCells(t *testing.T, got, want []any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cells mismatch\n got: %#v\nwant: %#v", got, want)
	}
}

// columnNames lists a table's column names, the wide ones marked with a
// trailing "*".
func columnNames(columns []metav1.TableColumnDefinition) []string {
	names := make([]string, len(columns))
	for i, c := range columns {
		names[i] = c.Name
		if c.Priority == 1 {
			names[i] += "*"
		}
	}
	return names
}
