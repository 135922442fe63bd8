package allocator

import (
	"bytes"
	"slices"
	"testing"
)

func TestStaticBandSize(t *testing.T) {
	tests := []struct {
		name                 string
		rangeSize, step, max int
		want                 int
	}{
		{"ClusterIP /28 has no band", 16, ipBandStep, ipBandMax, 0},
		{"ClusterIP /27 gets the minimum", 32, ipBandStep, ipBandMax, 16},
		{"ClusterIP /24 gets the minimum", 256, ipBandStep, ipBandMax, 16},
		{"ClusterIP /20 scales", 4096, ipBandStep, ipBandMax, 256},
		{"ClusterIP /22 scales", 1024, ipBandStep, ipBandMax, 64},
		{"ClusterIP /12 is capped", 1 << 20, ipBandStep, ipBandMax, 256},
		{"NodePort 16 ports have no band", 16, portBandStep, portBandMax, 0},
		{"NodePort 17 ports get the minimum", 17, portBandStep, portBandMax, 16},
		{"NodePort default range scales", DefaultNodePortSize, portBandStep, portBandMax, 86},
		{"NodePort large range is capped", 20000, portBandStep, portBandMax, 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := staticBandSize(tt.rangeSize, tt.step, tt.max); got != tt.want {
				t.Errorf("staticBandSize(%d, %d, %d) = %d, want %d", tt.rangeSize, tt.step, tt.max, got, tt.want)
			}
		})
	}
}

func TestBitmapTakeRandom(t *testing.T) {
	tests := []struct {
		name             string
		size, staticBand int
		taken            []int
		start            int // what intn returns
		want             int
		wantOK           bool
	}{
		{"starts inside the upper band", 10, 4, nil, 0, 4, true},
		{"walks forward from the random start", 10, 4, []int{6, 7}, 2, 8, true},
		{"wraps inside the upper band", 10, 4, []int{8, 9}, 4, 4, true},
		{"falls back to the static band", 10, 4, []int{4, 5, 6, 7, 8, 9}, 1, 1, true},
		{"wraps inside the static band", 10, 4, []int{3, 4, 5, 6, 7, 8, 9}, 3, 0, true},
		{"no band uses the whole range", 6, 0, []int{0, 1}, 0, 2, true},
		{"full", 3, 0, []int{0, 1, 2}, 0, 0, false},
		{"empty range", 0, 0, nil, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBitmap(tt.size, tt.staticBand)
			for _, o := range tt.taken {
				b.take(o)
			}
			intn := func(n int) int { return tt.start % n }
			got, ok := b.takeRandom(intn)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("takeRandom() = %d, %v, want %d, %v", got, ok, tt.want, tt.wantOK)
			}
			if ok && !b.has(got) {
				t.Errorf("offset %d is not marked taken", got)
			}
		})
	}
}

func TestBitmapOffsetsAndBytes(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		taken []int
		want  []int
		bytes []byte
	}{
		{"empty", 100, nil, nil, []byte{}},
		// Upstream's layout: big-endian bytes of the integer with bit i set.
		{"one offset", 100, []int{9}, []int{9}, []byte{0x02, 0x00}},
		{"across words", 200, []int{0, 63, 64, 130}, []int{0, 63, 64, 130}, nil},
		{"bits beyond size are not offsets", 10, []int{2, 12}, []int{2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBitmap(tt.size, 0)
			for _, o := range tt.taken {
				b.set.SetBit(b.set, o, 1)
			}
			if got := b.offsets(); !slices.Equal(got, tt.want) {
				t.Errorf("offsets() = %v, want %v", got, tt.want)
			}
			if tt.bytes != nil && !bytes.Equal(b.bytes(), tt.bytes) {
				t.Errorf("bytes() = %x, want %x", b.bytes(), tt.bytes)
			}
			back := newBitmap(tt.size, 0)
			back.restore(b.bytes())
			if back.set.Cmp(b.set) != 0 {
				t.Errorf("restore(bytes()) = %x, want %x", back.bytes(), b.bytes())
			}
		})
	}
}

func TestBitmapTakeFree(t *testing.T) {
	b := newBitmap(8, 0)
	steps := []struct {
		name string
		do   func(int) bool
		at   int
		want bool
	}{
		{"take a free offset", b.take, 3, true},
		{"take it again", b.take, 3, false},
		{"free it", b.free, 3, true},
		{"free it again", b.free, 3, false},
		{"take it once more", b.take, 3, true},
	}
	for _, s := range steps {
		if got := s.do(s.at); got != s.want {
			t.Fatalf("%s: got %v, want %v", s.name, got, s.want)
		}
	}
}
