package lab

import (
	"context"
	"errors"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// apiRetryFor is how long a bring-up write keeps trying through transient
// failures before the step fails with the last of them.
const apiRetryFor = time.Minute

// whileTransient runs call until it succeeds, fails for a reason that
// another try would not change, or apiRetryFor passes, as kubeadm's API
// client retries the writes of its add-on phases. An API server that has
// only just started, on a machine busy with other work, may reset a
// connection or answer 429 or 5xx once with nothing wrong; a bring-up
// should not give up on the whole cluster for that. call must be safe to
// repeat: a create whose response was lost comes back AlreadyExists.
func whileTransient(ctx context.Context, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, apiRetryFor)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		err := call(ctx)
		if err == nil || !transientAPIError(err) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// transientAPIError says whether err is a failure of the connection or an
// overloaded server, rather than an answer about the request.
func transientAPIError(err error) bool {
	var netErr net.Error
	switch {
	case utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err), utilnet.IsConnectionRefused(err):
		return true
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsInternalError(err), apierrors.IsTimeout(err):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	}
	return false
}
