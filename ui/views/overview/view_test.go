package overview

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/internal/uitest"
	"github.com/klab-dev/klab/ui/kubestate"
	"github.com/klab-dev/klab/ui/labio"
)

func TestMain(m *testing.M) {
	// Times on screen are the local clock's; the golden files are UTC's.
	time.Local = time.UTC
	os.Exit(m.Run())
}

var scenarios = []struct {
	name  string
	build func() cluster
	sizes bool // every size, or 80x24 only
}{
	{"running", healthy, true},
	{"troubled", troubled, true},
	{"large", func() cluster { return large(100, 1000) }, true},
	{"disconnected", disconnected, false},
	{"etcd-only", etcdOnly, false},
}

func TestOverviewGolden(t *testing.T) {
	for _, sc := range scenarios {
		for _, lang := range uitest.Langs {
			for _, size := range uitest.Sizes {
				if !sc.sizes && size.W != 80 {
					continue
				}
				name := fmt.Sprintf("%s-%s-%dx%d", sc.name, lang, size.W, size.H)
				t.Run(name, func(t *testing.T) {
					c := uitest.Setup(t, lang)
					cl := sc.build()
					got := cl.view(c, size.W, size.H).View()
					uitest.CheckFrame(t, got, size.W, size.H)
					uitest.Golden(t, name, got)
				})
			}
		}
	}
}

// Every scenario fits every size from the smallest the workspace allows,
// in both languages.
func TestOverviewFitsEverySize(t *testing.T) {
	for _, lang := range uitest.Langs {
		c := uitest.Setup(t, lang)
		for _, sc := range scenarios {
			cl := sc.build()
			for _, w := range []int{40, 57, 80, 99, 120, 161, 200} {
				for _, h := range []int{10, 13, 17, 21, 24, 33, 40, 60} {
					got := cl.view(c, w, h).View()
					t.Run(fmt.Sprintf("%s-%s-%dx%d", sc.name, lang, w, h), func(t *testing.T) {
						uitest.CheckFrame(t, got, w, h)
					})
				}
			}
		}
	}
}

func TestOverviewIsHonest(t *testing.T) {
	c := uitest.Setup(t, "en")
	cl := troubled()
	got := cl.view(c, 120, 40).View()
	for _, want := range []string{
		"2 of 3 members healthy", "✗ etcd killed", "✗ kube-apiserver killed",
		"✓ kube-scheduler ★ leader", "✓ kube-controller-manager ★ leader",
		"? Unknown", "since 11:59:20 · NodeStatusUnknown", "✗ kubelet stopped",
		"✗ kube-proxy not answering", "✓ kube-proxy ipvs", "✓ kube-proxy iptables → ipvs",
		"5 of 6 nodes Ready", "1 waiting for a node", "kube-proxy ConfigMap: ipvs",
		"address 127.0.0.11", "podCIDR 10.244.11.0/24",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("overview lacks %q:\n%s", want, got)
		}
	}
	// The scheduler lease moved to master-3: its box, not master-1's,
	// carries the star.
	if !strings.Contains(boxOf(got, "master-3"), "kube-scheduler ★") || strings.Contains(boxOf(got, "master-1"), "kube-scheduler ★") {
		t.Errorf("the scheduler lease is marked on the wrong box:\n%s", got)
	}
}

// boxOf returns the text of the box titled title, found by cells.
func boxOf(frame, title string) string {
	lines := strings.Split(frame, "\n")
	for i, l := range lines {
		at := strings.Index(l, "│ "+title+" ")
		if at < 0 {
			continue
		}
		left := lipgloss.Width(l[:at])
		right := left + 1 + strings.Index(ansi.Cut(l, left+1, lipgloss.Width(l)), "│")
		var out []string
		for _, below := range lines[i:] {
			cell := ansi.Cut(below, left, right+1)
			if strings.HasPrefix(cell, "╰") {
				break
			}
			out = append(out, cell)
		}
		return strings.Join(out, "\n")
	}
	return ""
}

// With a hundred workers not every node fits: the nodes in trouble are
// among those shown, the rest are counted, and nothing spills.
func TestOverviewLargeKeepsTrouble(t *testing.T) {
	for _, size := range uitest.Sizes {
		t.Run(fmt.Sprintf("%dx%d", size.W, size.H), func(t *testing.T) {
			c := uitest.Setup(t, "en")
			cl := large(100, 1000)
			got := cl.view(c, size.W, size.H).View()
			for _, want := range []string{"worker-100", "worker-7", "master-1", "102 of 103 nodes Ready"} {
				if !strings.Contains(got, want) {
					t.Errorf("lacks %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, "more nodes") {
				return
			}
			for i := 1; i <= 100; i++ {
				if !strings.Contains(got, fmt.Sprintf("worker-%d ", i)) {
					t.Fatalf("neither shows worker-%d nor counts the nodes left out:\n%s", i, got)
				}
			}
		})
	}
}

// The heights the layout counts are the heights it draws.
func TestBoxHeightCounts(t *testing.T) {
	for _, lang := range uitest.Langs {
		c := uitest.Setup(t, lang)
		v := New(c, nil)
		v.paint = newPaint(c.Styles)
		for _, sc := range scenarios {
			cl := sc.build()
			nodes := v.gather(cl.info, cl.st, cl.ks, cl.comps)
			for i := range nodes {
				for d := detailFull; d < numDetails; d++ {
					for _, inner := range []int{12, minInner, comfortInner, maxInner} {
						got, want := v.boxHeight(&nodes[i], inner, d), len(v.boxLines(&nodes[i], inner, d))
						if got != want {
							t.Errorf("%s %s %s detail %d inner %d: counted %d lines, drew %d", lang, sc.name, nodes[i].name, d, inner, got, want)
						}
					}
				}
			}
		}
	}
}

func TestPodRow(t *testing.T) {
	c := uitest.Setup(t, i18n.English)
	v := New(c, nil)
	v.paint = newPaint(c.Styles)
	cl := large(10, 200)
	counts := cl.ks.Counts("worker-7")
	tests := []struct {
		width int
		want  string
	}{
		{40, "✗◐◐○" + strings.Repeat("●", 17)},
		{12, "✗◐◐○●●●● +13"},
		{5, "✗ +20"},
		{4, " +21"},
		{3, ""},
	}
	for _, tt := range tests {
		got, w := v.podRow(&counts, tt.width)
		if got != tt.want || w > tt.width {
			t.Errorf("podRow(width %d) = %q (%d cells), want %q", tt.width, got, w, tt.want)
		}
	}
}

// The Overview follows the Kubernetes feed itself, and keeps the runtime's
// reports of the components as the workspace receives them; an error
// keeps the last report.
func TestOverviewTakesItsSources(t *testing.T) {
	c := uitest.Setup(t, "en")
	cl := troubled()
	v := New(c, cl.st)
	v.info = cl.info
	v.SetSize(120, 40)
	if !v.Owns(kubestate.UpdateMsg{}) || v.Owns(labio.ComponentsMsg{}) || v.Owns(labio.ObservationsMsg{}) {
		t.Error("the Overview owns exactly the Kubernetes feed's messages")
	}
	if v.Update(labio.ComponentsMsg{Infos: cl.comps}) != nil {
		t.Error("a report of the components asked for a command")
	}
	if got := v.View(); !strings.Contains(got, "✗ etcd killed") {
		t.Errorf("the report taken is not shown:\n%s", got)
	}
	v.Update(labio.ComponentsMsg{Err: errors.New("engine gone")})
	if got := v.View(); !strings.Contains(got, "✗ etcd killed") {
		t.Errorf("a failed report dropped the last one:\n%s", got)
	}
	if cmd := v.Update(kubestate.UpdateMsg{}); cmd != nil {
		t.Error("a message of no feed asked to wait for the next")
	}
}
