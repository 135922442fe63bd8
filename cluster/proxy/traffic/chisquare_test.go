package traffic

import (
	"math"
	"testing"
)

func TestChiSquareSurvivalKnownValues(t *testing.T) {
	tests := []struct {
		name string
		x    float64
		df   int
		want float64
		tol  float64 // absolute
	}{
		// Critical values from the standard chi-square table, to the
		// table's three decimals.
		{"df1 5%", 3.841, 1, 0.05, 1e-4},
		{"df2 5%", 5.991, 2, 0.05, 1e-4},
		{"df3 5%", 7.815, 3, 0.05, 1e-4},
		{"df10 5%", 18.307, 10, 0.05, 1e-4},
		{"df100 5%", 124.342, 100, 0.05, 1e-4},
		{"df1 1%", 6.635, 1, 0.01, 1e-4},
		{"df5 1%", 15.086, 5, 0.01, 1e-4},
		{"df2 99%", 0.0201, 2, 0.99, 1e-4},
		{"df30 50%", 29.336, 30, 0.5, 1e-4},
		{"x=0 df1", 0, 1, 1, 0},
		{"x=0 df7", 0, 7, 1, 0},
		{"far tail", 1000, 3, 0, 1e-200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chiSquareSurvival(tt.x, tt.df); math.Abs(got-tt.want) > tt.tol {
				t.Errorf("Q(χ²=%g, df=%d) = %.6g, want %g ± %g", tt.x, tt.df, got, tt.want, tt.tol)
			}
		})
	}
}

// TestChiSquareSurvivalClosedForms checks both expansions (the series below
// x = a+1, the continued fraction above) against the degrees of freedom
// that have a closed form, in the bulk and far into the tail.
func TestChiSquareSurvivalClosedForms(t *testing.T) {
	forms := []struct {
		df   int
		want func(x float64) float64
	}{
		{1, func(x float64) float64 { return math.Erfc(math.Sqrt(x / 2)) }},
		{2, func(x float64) float64 { return math.Exp(-x / 2) }},
		{4, func(x float64) float64 { return math.Exp(-x/2) * (1 + x/2) }},
		{6, func(x float64) float64 { return math.Exp(-x/2) * (1 + x/2 + x*x/8) }},
	}
	for _, f := range forms {
		for _, x := range []float64{1e-6, 0.01, 0.5, 1, 2, 2.999, 3.001, 5, 10, 30, 100, 500} {
			got, want := chiSquareSurvival(x, f.df), f.want(x)
			if rel := math.Abs(got-want) / want; rel > 1e-9 {
				t.Errorf("df %d, x %g: got %.15g, want %.15g (relative error %.2g)", f.df, x, got, want, rel)
			}
		}
	}
}

func TestGammaQRejectsOutOfDomain(t *testing.T) {
	for _, c := range [][2]float64{{0, 1}, {-1, 1}, {1, -1}, {math.NaN(), 1}} {
		if q := gammaQ(c[0], c[1]); !math.IsNaN(q) {
			t.Errorf("gammaQ(%g, %g) = %g, want NaN", c[0], c[1], q)
		}
	}
	if q := gammaQ(2, math.Inf(1)); q != 0 {
		t.Errorf("gammaQ(2, +Inf) = %g, want 0", q)
	}
}

func TestChiSquareUniform(t *testing.T) {
	tests := []struct {
		name   string
		counts []int
		want   ChiSquare
	}{
		{"exactly even", []int{100, 100, 100}, ChiSquare{Statistic: 0, DF: 2, PValue: 1}},
		{"uneven", []int{10, 20, 30}, ChiSquare{Statistic: 10, DF: 2, PValue: math.Exp(-5)}},
		{"two pods", []int{60, 40}, ChiSquare{Statistic: 4, DF: 1, PValue: math.Erfc(math.Sqrt(2))}},
		{"one pod", []int{300}, ChiSquare{PValue: 1}},
		{"none", nil, ChiSquare{PValue: 1}},
		{"all zero", []int{0, 0}, ChiSquare{PValue: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChiSquareUniform(tt.counts)
			if got.DF != tt.want.DF || math.Abs(got.Statistic-tt.want.Statistic) > 1e-12 ||
				math.Abs(got.PValue-tt.want.PValue) > 1e-12 {
				t.Errorf("ChiSquareUniform(%v) = %+v, want %+v", tt.counts, got, tt.want)
			}
		})
	}
}
