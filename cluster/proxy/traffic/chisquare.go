package traffic

import "math"

// UnevenPValue is the p-value below which the report calls a spread uneven:
// a fair random choice gives a smaller one only once in a hundred runs.
const UnevenPValue = 0.01

// ChiSquare is Pearson's chi-square goodness-of-fit test of some counts
// against an even spread.
type ChiSquare struct {
	// Statistic is the sum over the counts of (observed − expected)² /
	// expected, where expected is the mean count.
	Statistic float64 `json:"statistic"`
	// DF is the degrees of freedom: the number of counts minus one.
	DF int `json:"df"`
	// PValue is the chance that a truly even random choice would give a
	// Statistic at least this large. A value near 1 is an even spread; a
	// tiny one says the choice favours some pods.
	PValue float64 `json:"pValue"`
}

// Uneven reports whether the test rejects an even spread at UnevenPValue.
func (c ChiSquare) Uneven() bool { return c.DF > 0 && c.PValue < UnevenPValue }

// ChiSquareUniform tests counts against an even spread. With fewer than two
// counts, or none above zero, there is nothing to test: the result has DF 0
// and PValue 1.
func ChiSquareUniform(counts []int) ChiSquare {
	total := 0
	for _, c := range counts {
		total += c
	}
	if len(counts) < 2 || total == 0 {
		return ChiSquare{PValue: 1}
	}
	expected := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		d := float64(c) - expected
		x += d * d / expected
	}
	df := len(counts) - 1
	return ChiSquare{Statistic: x, DF: df, PValue: chiSquareSurvival(x, df)}
}

// chiSquareSurvival is P(X ≥ x) for X chi-square distributed with df degrees
// of freedom: the regularized upper incomplete gamma function Q(df/2, x/2).
func chiSquareSurvival(x float64, df int) float64 {
	if x <= 0 {
		return 1
	}
	return gammaQ(float64(df)/2, x/2)
}

// Tuning of the two expansions of the incomplete gamma function.
const (
	gammaEpsilon  = 1e-15  // relative size of the last term kept
	gammaMaxSteps = 1000   // ample: both converge in well under 100 steps for a ≤ 100
	gammaTiny     = 1e-300 // stands in for zero in Lentz's method
)

// gammaQ is the regularized upper incomplete gamma function
//
//	Q(a, x) = Γ(a, x) / Γ(a) = 1/Γ(a) ∫ₓ^∞ t^(a−1) e^(−t) dt,  a > 0, x ≥ 0.
//
// Below x = a+1 the power series of the lower function P = 1 − Q converges
// fast; above it the continued fraction of Q does. Each is used where it is
// quick and accurate.
func gammaQ(a, x float64) float64 {
	switch {
	case math.IsNaN(a) || math.IsNaN(x) || a <= 0 || x < 0:
		return math.NaN()
	case x == 0:
		return 1
	case math.IsInf(x, 1):
		return 0
	case x < a+1:
		return 1 - gammaPSeries(a, x)
	default:
		return gammaQFraction(a, x)
	}
}

// gammaPrefix is x^a e^(−x) / Γ(a), computed through logarithms so that
// neither factor overflows on its own.
func gammaPrefix(a, x float64) float64 {
	lg, _ := math.Lgamma(a)
	return math.Exp(a*math.Log(x) - x - lg)
}

// gammaPSeries is P(a, x) from its power series
//
//	P(a, x) = x^a e^(−x) / Γ(a) · Σₙ xⁿ / (a (a+1) … (a+n)).
func gammaPSeries(a, x float64) float64 {
	term := 1 / a
	sum := term
	for n := 1; n < gammaMaxSteps; n++ {
		term *= x / (a + float64(n))
		sum += term
		if math.Abs(term) < math.Abs(sum)*gammaEpsilon {
			break
		}
	}
	return min(1, sum*gammaPrefix(a, x))
}

// gammaQFraction is Q(a, x) from its continued fraction
//
//	Q(a, x) = x^a e^(−x) / Γ(a) · 1/(x+1−a − 1(1−a)/(x+3−a − 2(2−a)/(x+5−a − …)))
//
// evaluated front to back with the modified Lentz method.
func gammaQFraction(a, x float64) float64 {
	// The fraction is b₀ + a₁/(b₁ + a₂/(b₂ + …)) with b₀ = 0, a₁ = 1,
	// bₙ = x + 2n − 1 − a and, from n = 2, aₙ = −(n−1)(n−1−a).
	b := x + 1 - a
	c := 1 / gammaTiny
	d := 1 / b
	f := d
	for n := 1; n < gammaMaxSteps; n++ {
		an := -float64(n) * (float64(n) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < gammaTiny {
			d = gammaTiny
		}
		c = b + an/c
		if math.Abs(c) < gammaTiny {
			c = gammaTiny
		}
		d = 1 / d
		step := c * d
		f *= step
		if math.Abs(step-1) < gammaEpsilon {
			break
		}
	}
	return max(0, f*gammaPrefix(a, x))
}
