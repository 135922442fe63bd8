package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// watchNodeGraph keeps the Node authorizer's graph of pods current, as
// upstream's graph populator does from a pod informer: a watch of pods
// from the watch cache, starting with every pod, restarted from a fresh
// list if it ends. It returns once the pods have been listed, so that no
// kubelet is refused its own pod's secret because the server had not yet
// looked.
func (s *Server) watchNodeGraph(ctx context.Context) error {
	watchCtx, cancel := context.WithCancel(context.Background())
	s.life.Go(func() {
		<-s.life.Quit()
		cancel()
	})
	res, _ := s.reg.Lookup(podsGVR)
	sink := watchSink{
		replace: func(objs []runtime.Object) {
			pods := make([]*corev1.Pod, 0, len(objs))
			for _, o := range objs {
				if p, ok := o.(*corev1.Pod); ok {
					pods = append(pods, p)
				}
			}
			s.nodeGraph.ReplacePods(pods)
		},
		set: func(obj runtime.Object) {
			if p, ok := obj.(*corev1.Pod); ok {
				s.nodeGraph.SetPod(p)
			}
		},
		delete: func(obj runtime.Object) {
			if p, ok := obj.(*corev1.Pod); ok {
				s.nodeGraph.DeletePod(p)
			}
		},
	}
	synced := make(chan struct{}, 1)
	var once bool
	s.life.Go(func() {
		s.followResource(watchCtx, res, sink, func() {
			if !once {
				once = true
				synced <- struct{}{}
			}
		})
	})
	ctx, stop := context.WithTimeout(ctx, policySyncTimeout)
	defer stop()
	select {
	case <-synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("api server %s: load the pods for the Node authorizer: %w", s.cfg.Name, ctx.Err())
	}
}

// notePodWrite applies a pod this server just wrote to the Node
// authorizer's graph at once, so that a kubelet told of its new pod by
// this server finds the pod's secrets readable; the watch brings the same
// change, and every other server's, a moment later.
func (s *Server) notePodWrite(obj runtime.Object, deleted bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if deleted {
		s.nodeGraph.DeletePod(pod)
	} else {
		s.nodeGraph.SetPod(pod)
	}
}
