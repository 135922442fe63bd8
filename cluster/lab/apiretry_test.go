package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWhileTransient(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name      string
		errs      []error // what each call returns, in order; nil after the list
		wantCalls int
		wantErr   bool
	}{
		{name: "a connection reset, then success", errs: []error{fmt.Errorf("post: %w", syscall.ECONNRESET)}, wantCalls: 2},
		{name: "an EOF and a 429, then success", errs: []error{io.ErrUnexpectedEOF, apierrors.NewTooManyRequests("slow down", 1)}, wantCalls: 3},
		{name: "a 503, then already exists", errs: []error{apierrors.NewServiceUnavailable("starting"), apierrors.NewAlreadyExists(gr, "x")}, wantCalls: 2, wantErr: true},
		{name: "a refusal is final", errs: []error{apierrors.NewForbidden(gr, "x", errors.New("no"))}, wantCalls: 1, wantErr: true},
		{name: "an invalid object is final", errs: []error{apierrors.NewBadRequest("bad")}, wantCalls: 1, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := whileTransient(context.Background(), func(context.Context) error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if calls != tc.wantCalls || (err != nil) != tc.wantErr {
				t.Errorf("calls = %d, err = %v; want %d calls, error %v", calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
}

func TestWhileTransientStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := whileTransient(ctx, func(context.Context) error {
		calls++
		cancel()
		return syscall.ECONNRESET
	})
	if !errors.Is(err, syscall.ECONNRESET) || calls != 1 {
		t.Errorf("err = %v after %d calls; want the reset after 1 call", err, calls)
	}
}
