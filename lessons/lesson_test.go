package lessons

import (
	"reflect"
	"slices"
	"testing"
)

func TestShapeAt(t *testing.T) {
	three, two, five := Shape{Masters: 3, Workers: 1}, Shape{Masters: 2, Workers: 1}, Shape{Masters: 5, Workers: 1}
	l := &Lesson{Cluster: three, Steps: []*Step{
		{ID: "a"}, {ID: "b", Cluster: &two}, {ID: "c"}, {ID: "d", Cluster: &five}, {ID: "e"},
	}}
	for i, want := range []Shape{three, two, two, five, five} {
		if got := l.ShapeAt(i); got != want {
			t.Errorf("ShapeAt(%d) = %+v, want %+v", i, got, want)
		}
	}
	// Past the end is the last step's shape; before the start, the lesson's.
	if got := l.ShapeAt(9); got != five {
		t.Errorf("ShapeAt(9) = %+v, want %+v", got, five)
	}
	if got := l.ShapeAt(-1); got != three {
		t.Errorf("ShapeAt(-1) = %+v, want %+v", got, three)
	}
}

// TestSegmentNeeds: the needs around a step are those of every step that
// shares its cluster, before it and after it, and of no other cluster's.
func TestSegmentNeeds(t *testing.T) {
	key := func(k string) Check { return KeyExistsCheck{Key: k} }
	l := &Lesson{Steps: []*Step{
		{ID: "a", Check: key("/a")},
		{ID: "b", Check: LeaderChangedCheck{}},
		{ID: "c", Check: key("/c")},
		{ID: "d", Check: key("/d"), Cluster: &Shape{Masters: 5}},
		{ID: "e", Check: key("/e")},
	}}
	for _, tt := range []struct {
		step int
		want []string
	}{
		{0, []string{"/a", "/c"}},
		{2, []string{"/a", "/c"}},
		{3, []string{"/d", "/e"}},
		{4, []string{"/d", "/e"}},
		{9, []string{"/d", "/e"}},
	} {
		if got := l.SegmentNeeds(tt.step).Keys; !slices.Equal(got, tt.want) {
			t.Errorf("SegmentNeeds(%d).Keys = %q, want %q", tt.step, got, tt.want)
		}
	}
	if !l.SegmentNeeds(1).Members {
		t.Error("SegmentNeeds(1) does not follow the members its leader-changed check reads")
	}
	if got := (&Lesson{}).SegmentNeeds(0); !reflect.DeepEqual(got, Needs{}) {
		t.Errorf("SegmentNeeds of a lesson without steps = %+v, want none", got)
	}
}
