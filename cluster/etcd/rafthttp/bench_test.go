package rafthttp

import (
	"context"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// countingRaft releases one credit per processed message so the benchmark
// can keep a bounded number of messages in flight.
type countingRaft struct {
	*recorder
	credits chan struct{}
}

func (c countingRaft) Process(context.Context, *raftpb.Message) error {
	<-c.credits
	return nil
}

// BenchmarkSendMsgApp measures MsgApp throughput over one loopback stream,
// with 1 KiB entries, keeping at most half a queue in flight so nothing is
// dropped.
func BenchmarkSendMsgApp(b *testing.B) {
	a, r := newNode(b, 1, nodeOptions{}), newNode(b, 2, nodeOptions{})
	credits := make(chan struct{}, queueSize/2)
	counting := New(Config{ID: 2, ClusterID: 0xc1, Raft: countingRaft{recorder: r.rec, credits: credits}})
	defer counting.Stop()
	r.srv.Config.Handler = counting.Handler()
	connect(a, r)

	m := msgApp(1, 2, 1, make([]byte, 1024))
	b.SetBytes(int64(proto.Size(m)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		credits <- struct{}{}
		a.tr.Send([]*raftpb.Message{m})
	}
	// Wait until the receiver has taken every credit.
	for range queueSize / 2 {
		credits <- struct{}{}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if u := a.obs.count(EventUnreachable); u > 0 {
		b.Fatalf("%d messages unreachable", u)
	}
}
