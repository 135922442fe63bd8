package lessons

import "testing"

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
