package controllerutil

import (
	"errors"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestComputeHash(t *testing.T) {
	template := func(image string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
		}
	}
	a := ComputeHash(template("v1"), nil)
	if a != ComputeHash(template("v1"), nil) {
		t.Error("same template hashed twice differently (map order must not matter)")
	}
	if a == ComputeHash(template("v2"), nil) {
		t.Error("different templates, same hash")
	}
	if a == ComputeHash(template("v1"), ptr.To[int32](1)) {
		t.Error("collisionCount does not change the hash")
	}
	for _, r := range a {
		if r == 'a' || r == 'e' || r == 'i' || r == 'o' || r == 'u' {
			t.Errorf("hash %q contains a vowel; SafeEncodeString avoids them", a)
		}
	}
}

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		name          string
		count, failAt int // failAt: the call number that fails, 0 for none
		wantCalls     int
		wantSuccesses int
	}{
		{"all succeed", 10, 0, 10, 10},
		{"first fails: one call only", 10, 1, 1, 0},
		{"fourth fails: batches 1, 2, 4 then stop", 10, 4, 7, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			successes, err := SlowStartBatch(tt.count, SlowStartInitialBatchSize, func() error {
				if int(calls.Add(1)) == tt.failAt {
					return errors.New("refused")
				}
				return nil
			})
			if int(calls.Load()) != tt.wantCalls || successes != tt.wantSuccesses || (err != nil) != (tt.failAt != 0) {
				t.Errorf("calls %d, successes %d, err %v; want %d, %d", calls.Load(), successes, err, tt.wantCalls, tt.wantSuccesses)
			}
		})
	}
}
