package cache

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func zoned(name, zone string) *v1.Node {
	if zone == "" {
		return node(name, nil)
	}
	return node(name, map[string]string{v1.LabelTopologyZone: zone})
}

func TestNodeTreeList(t *testing.T) {
	tests := []struct {
		name   string
		add    []*v1.Node
		remove []*v1.Node
		want   []string
	}{
		{
			name: "no zones keeps the order added",
			add:  []*v1.Node{zoned("w2", ""), zoned("w1", ""), zoned("w3", "")},
			want: []string{"w2", "w1", "w3"},
		},
		{
			name: "zones take turns",
			add:  []*v1.Node{zoned("a1", "a"), zoned("a2", "a"), zoned("a3", "a"), zoned("b1", "b"), zoned("c1", "c"), zoned("c2", "c")},
			want: []string{"a1", "b1", "c1", "a2", "c2", "a3"},
		},
		{
			name:   "a removed node leaves its zone's order intact",
			add:    []*v1.Node{zoned("a1", "a"), zoned("a2", "a"), zoned("a3", "a"), zoned("b1", "b")},
			remove: []*v1.Node{zoned("a2", "a"), zoned("b1", "b")},
			want:   []string{"a1", "a3"},
		},
		{
			name: "adding a node twice counts it once",
			add:  []*v1.Node{zoned("a1", "a"), zoned("a1", "a")},
			want: []string{"a1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := newNodeTree()
			for _, n := range tt.add {
				tree.add(n)
			}
			for _, n := range tt.remove {
				tree.remove(n)
			}
			if got := tree.list(); !slices.Equal(got, tt.want) {
				t.Errorf("list() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodeTreeZoneChange(t *testing.T) {
	tree := newNodeTree()
	tree.add(zoned("n1", "a"))
	tree.add(zoned("n2", "a"))
	tree.update(zoned("n1", "a"), zoned("n1", "b"))
	if got, want := tree.list(), []string{"n2", "n1"}; !slices.Equal(got, want) {
		t.Errorf("after n1 moved to zone b, list() = %v, want %v", got, want)
	}
	if len(tree.zones) != 2 {
		t.Errorf("zones = %q, want two", tree.zones)
	}
}
