package etcd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/klab-dev/klab/cluster/etcd/etcdtest"
)

// What klab's member does not implement fails loudly, naming what it does
// support — never a silent success.
func TestUnimplementedSaysWhatIsSupported(t *testing.T) {
	c := etcdtest.New(t, 1, nil)
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"Auth.UserList (unregistered service)", func() error {
			_, err := pb.NewAuthClient(cli.ActiveConnection()).UserList(ctx, &pb.AuthUserListRequest{})
			return err
		}},
		{"Maintenance.Hash", func() error {
			_, err := pb.NewMaintenanceClient(cli.ActiveConnection()).Hash(ctx, &pb.HashRequest{})
			return err
		}},
		{"Maintenance.HashKV", func() error {
			_, err := pb.NewMaintenanceClient(cli.ActiveConnection()).HashKV(ctx, &pb.HashKVRequest{})
			return err
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			s, _ := grpcstatus.FromError(err)
			if s.Code() != codes.Unimplemented || !strings.Contains(s.Message(), "klab's etcd supports") {
				t.Fatalf("got %v; want Unimplemented naming what klab supports", err)
			}
		})
	}
}
