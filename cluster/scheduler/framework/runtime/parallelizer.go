package runtime

import (
	"context"
	"math"

	"k8s.io/client-go/util/workqueue"
)

// DefaultParallelism is upstream's default number of goroutines that filter
// and score nodes at once.
const DefaultParallelism = 16

// Parallelizer runs a function over pieces of work in parallel, handing the
// pieces out in chunks so that many small pieces (nodes) do not each pay for
// a channel operation.
type Parallelizer struct {
	parallelism int
}

// NewParallelizer returns a parallelizer with n workers (at least 1).
func NewParallelizer(n int) Parallelizer {
	if n < 1 {
		n = 1
	}
	return Parallelizer{parallelism: n}
}

// Until runs doWorkPiece for every piece in [0, pieces), stopping early
// when ctx is cancelled: pieces not started by then are not run.
func (p Parallelizer) Until(ctx context.Context, pieces int, doWorkPiece func(piece int)) {
	workers := max(p.parallelism, 1) // the zero Parallelizer still works
	workqueue.ParallelizeUntil(ctx, workers, pieces, doWorkPiece,
		workqueue.WithChunkSize(chunkSizeFor(pieces, workers)))
}

// chunkSizeFor is upstream's choice: about the square root of the number of
// pieces, but small enough that every worker gets some.
func chunkSizeFor(n, parallelism int) int {
	s := int(math.Sqrt(float64(n)))
	if r := n/parallelism + 1; s > r {
		s = r
	}
	if s < 1 {
		s = 1
	}
	return s
}
