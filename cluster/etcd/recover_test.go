package etcd

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRecoverInterceptors: a panicking handler fails its own call with
// Internal and a log line, instead of killing the member's process.
func TestRecoverInterceptors(t *testing.T) {
	var logs bytes.Buffer
	m := &Member{lg: slog.New(slog.NewTextHandler(&logs, nil))}
	_, err := m.recoverUnary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/etcdserverpb.KV/Range"},
		func(context.Context, any) (any, error) { panic("index out of range") })
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "index out of range") {
		t.Errorf("unary panic gave %v, want Internal naming the panic", err)
	}
	err = m.recoverStream(nil, nil, &grpc.StreamServerInfo{FullMethod: "/etcdserverpb.Watch/Watch"},
		func(any, grpc.ServerStream) error { panic("closed channel") })
	if status.Code(err) != codes.Internal {
		t.Errorf("stream panic gave %v, want Internal", err)
	}
	for _, want := range []string{"level=ERROR", "/etcdserverpb.KV/Range", "/etcdserverpb.Watch/Watch", "recover_test.go"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	// No panic: the handler's own answer passes through.
	resp, err := m.recoverUnary(context.Background(), nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) { return "ok", nil })
	if resp != "ok" || err != nil {
		t.Errorf("recoverUnary changed a normal answer: %v, %v", resp, err)
	}
}
