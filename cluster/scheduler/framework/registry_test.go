package framework

import (
	"context"
	"testing"
)

func TestRegistryRefusesDuplicates(t *testing.T) {
	r := Registry{}
	f := func(context.Context, Handle) (Plugin, error) { return nil, nil }
	if err := r.Register("NodeName", f); err != nil {
		t.Fatalf("first register: %v", err)
	}
	if err := r.Register("NodeName", f); err == nil {
		t.Fatal("registering NodeName twice succeeded")
	}
}
