package allocator

import (
	"math/big"
	"math/bits"
)

// bitmap is the allocation state of one range: bit i of set is 1 when
// offset i is taken. size is the number of usable offsets, and offsets below
// staticBand form the band that random allocation touches only when every
// offset above it is taken.
//
// The bitmap is a value that the store copies before each change, so a
// change that loses its compare-and-swap leaves no trace.
type bitmap struct {
	set        *big.Int
	size       int
	staticBand int
}

func newBitmap(size, staticBand int) *bitmap {
	return &bitmap{set: new(big.Int), size: size, staticBand: staticBand}
}

// clone returns a copy that can be changed without touching b.
func (b *bitmap) clone() *bitmap {
	return &bitmap{set: new(big.Int).Set(b.set), size: b.size, staticBand: b.staticBand}
}

// has reports whether offset is taken.
func (b *bitmap) has(offset int) bool {
	return b.set.Bit(offset) == 1
}

// take marks offset taken and reports whether it was free before.
func (b *bitmap) take(offset int) bool {
	if b.has(offset) {
		return false
	}
	b.set.SetBit(b.set, offset, 1)
	return true
}

// free marks offset free and reports whether it was taken before.
func (b *bitmap) free(offset int) bool {
	if !b.has(offset) {
		return false
	}
	b.set.SetBit(b.set, offset, 0)
	return true
}

// takeRandom takes a free offset chosen as upstream's random scan with an
// offset does: start at a random point of the upper band [staticBand, size)
// and walk forward, wrapping inside the band; only if the whole upper band is
// taken, do the same in the lower band [0, staticBand). intn returns a
// number in [0, n) for n > 0. It reports false when every offset is taken.
func (b *bitmap) takeRandom(intn func(n int) int) (int, bool) {
	for _, band := range [2][2]int{{b.staticBand, b.size}, {0, b.staticBand}} {
		lo, hi := band[0], band[1]
		n := hi - lo
		if n <= 0 {
			continue
		}
		start := intn(n)
		for i := 0; i < n; i++ {
			at := lo + (start+i)%n
			if b.take(at) {
				return at, true
			}
		}
	}
	return 0, false
}

// offsets returns the taken offsets below size in increasing order. Bits at
// or above size can only come from a foreign writer; they are not reported.
func (b *bitmap) offsets() []int {
	var out []int
	for wordIndex, word := range b.set.Bits() {
		w := uint64(word)
		for w != 0 {
			bit := bits.TrailingZeros64(w)
			offset := wordIndex*bits.UintSize + bit
			if offset >= b.size {
				return out
			}
			out = append(out, offset)
			w &^= 1 << bit
		}
	}
	return out
}

// bytes returns the bitmap in upstream's RangeAllocation.data layout: the
// big-endian bytes of the integer whose bit i is offset i.
func (b *bitmap) bytes() []byte {
	return b.set.Bytes()
}

// restore replaces the bitmap's bits with data in the layout bytes returns.
func (b *bitmap) restore(data []byte) {
	b.set = new(big.Int).SetBytes(data)
}

// staticBandSize is upstream's min(max(minBand, size/step), maxBand) rule
// for the lower band, and 0 when the range has minBand values or fewer.
// rangeSize is the whole CIDR's size for ClusterIPs (network and broadcast
// included), the number of ports for NodePorts.
func staticBandSize(rangeSize, step, maxBand int) int {
	const minBand = 16
	if rangeSize <= minBand {
		return 0
	}
	return min(max(minBand, rangeSize/step), maxBand)
}
