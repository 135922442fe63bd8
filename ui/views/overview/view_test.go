package overview

import (
	"fmt"
	"strings"
	"testing"

	"github.com/klab-dev/klab/ui/internal/uitest"
)

func TestOverviewGolden(t *testing.T) {
	for _, killed := range []bool{false, true} {
		for _, lang := range uitest.Langs {
			for _, size := range uitest.Sizes {
				scenario := "running"
				if killed {
					scenario = "killed"
				}
				name := fmt.Sprintf("%s-%s-%dx%d", scenario, lang, size.W, size.H)
				t.Run(name, func(t *testing.T) {
					c := uitest.Setup(t, lang)
					info, st := uitest.Raft(3)
					if killed {
						info, st = uitest.Killed(3)
					}
					v := New(c)
					v.SetSize(size.W, size.H)
					got := v.Render(info, st)
					uitest.CheckFrame(t, got, size.W, size.H)
					uitest.Golden(t, name, got)
				})
			}
		}
	}
}

func TestOverviewIsHonest(t *testing.T) {
	c := uitest.Setup(t, "en")
	info, st := uitest.Killed(3)
	info.Spec.Workers = 2
	v := New(c)
	v.SetSize(120, 40)
	got := v.Render(info, st)
	for _, want := range []string{"✗ unreachable", "etcd ✗ killed", "2 of 3 members healthy", "Worker nodes: 2, each running a kubelet", "address 127.0.0.12"} {
		if !strings.Contains(got, want) {
			t.Errorf("overview lacks %q:\n%s", want, got)
		}
	}
}
