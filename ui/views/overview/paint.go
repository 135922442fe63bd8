package overview

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	corev1 "k8s.io/api/core/v1"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/runtime"
	"github.com/klab-dev/klab/ui/kubestate"
	"github.com/klab-dev/klab/ui/styles"
)

// podGlyphs draw a pod by its status, one cell each, so that the shape
// says it when colours are off.
var podGlyphs = [...]string{
	kubestate.PodFailed:      "✗",
	kubestate.PodUnknown:     "?",
	kubestate.PodPending:     "◐",
	kubestate.PodNotReady:    "○",
	kubestate.PodTerminating: "◌",
	kubestate.PodRunning:     "●",
	kubestate.PodSucceeded:   "◇",
}

// podWords name the statuses in the legend.
var podWords = [...]string{
	kubestate.PodFailed:      "ui.ov.pod.failed",
	kubestate.PodUnknown:     "ui.ov.pod.unknown",
	kubestate.PodPending:     "ui.ov.pod.pending",
	kubestate.PodNotReady:    "ui.ov.pod.not-ready",
	kubestate.PodTerminating: "ui.ov.pod.terminating",
	kubestate.PodRunning:     "ui.ov.pod.running",
	kubestate.PodSucceeded:   "ui.ov.pod.succeeded",
}

func podStyle(s *styles.Styles, st kubestate.PodStatus) lipgloss.Style {
	switch st {
	case kubestate.PodFailed, kubestate.PodUnknown:
		return s.Overview.Unhealthy
	case kubestate.PodPending, kubestate.PodNotReady:
		return s.Role.Candidate
	case kubestate.PodRunning:
		return s.Overview.Healthy
	}
	return s.Overview.Muted
}

// paint holds what every frame draws many times, rendered once: the
// styles never change while the program runs, so neither do these.
type paint struct {
	// styles are the styles the runs were drawn in; a theme change
	// brings new ones, and a new paint.
	styles *styles.Styles
	// runs[st][n] is n glyphs of status st in its style, for short runs.
	runs [len(podGlyphs)][]string
	sep  string
}

const cachedRun = 48

func newPaint(s *styles.Styles) *paint {
	p := &paint{styles: s, sep: s.Overview.Muted.Render(" · ")}
	for st := range podGlyphs {
		style := podStyle(s, kubestate.PodStatus(st))
		p.runs[st] = make([]string, cachedRun+1)
		for n := 1; n <= cachedRun; n++ {
			p.runs[st][n] = style.Render(strings.Repeat(podGlyphs[st], n))
		}
	}
	return p
}

// podRow draws counts as glyphs in at most width cells, most alarming
// first; when they do not all fit, the row ends with how many are left
// out (" +37"). It returns the row and its width.
func (v *View) podRow(c *kubestate.PodCounts, width int) (string, int) {
	total := c.Total()
	if total == 0 || width <= 0 {
		return "", 0
	}
	room := width
	more := ""
	if total > width {
		// Room for " +N", N being what the glyphs leave out.
		for k := 1; ; k++ {
			shown := width - k - 2
			if shown < 0 {
				return "", 0
			}
			if len(strconv.Itoa(total-shown)) <= k {
				room, more = shown, " +"+strconv.Itoa(total-shown)
				break
			}
		}
	}
	var b strings.Builder
	left := room
	for st, n := range c {
		n = min(n, left)
		if n == 0 {
			continue
		}
		left -= n
		if n <= cachedRun {
			b.WriteString(v.paint.runs[st][n])
		} else {
			b.WriteString(podStyle(v.c.Styles, kubestate.PodStatus(st)).Render(strings.Repeat(podGlyphs[st], n)))
		}
	}
	w := room - left
	if more != "" {
		b.WriteString(v.c.Styles.Overview.Muted.Render(more))
		w += len(more)
	}
	return b.String(), w
}

// compGlyph marks a component by the runtime's state.
func compGlyph(s *styles.Styles, state runtime.State) string {
	switch state {
	case runtime.StateRunning:
		return s.Overview.Healthy.Render("✓")
	case "":
		return s.Overview.Muted.Render("·")
	case runtime.StateCreated:
		return s.Overview.Muted.Render("…")
	case runtime.StatePaused:
		return s.Role.Candidate.Render("‖")
	}
	return s.Overview.Unhealthy.Render("✗")
}

// shortName is a component's name without the "kube-" that most share,
// for narrow boxes.
func shortName(name string) string { return strings.TrimPrefix(name, "kube-") }

// tagName is a component's abbreviation in one-line-per-node rows.
func tagName(name string) string {
	switch name {
	case runtime.ComponentAPIServer:
		return "api"
	case runtime.ComponentScheduler:
		return "sched"
	case runtime.ComponentControllerManager:
		return "cm"
	case runtime.ComponentKubeProxy:
		return "proxy"
	}
	return name
}

// readyBadge is a node's Ready condition as kubectl words it, marked; in
// short, the mark alone.
func readyBadge(s *styles.Styles, n *node, short bool) string {
	var style lipgloss.Style
	var mark, word string
	switch {
	case n.kube != nil && n.kube.IsReady():
		style, mark, word = s.Overview.Healthy, "✓", "ui.ov.ready"
	case n.kube != nil && (n.kube.Ready == corev1.ConditionUnknown || n.kube.Ready == ""):
		style, mark, word = s.Overview.Unhealthy, "?", "ui.ov.ready-unknown"
	case n.kube != nil:
		style, mark, word = s.Overview.Unhealthy, "✗", "ui.ov.not-ready"
	case n.synced && !n.registered:
		style, mark, word = s.Overview.Muted, "…", "ui.ov.unregistered"
	default:
		return ""
	}
	if short {
		return style.Render(mark)
	}
	return style.Render(mark + " " + i18n.T(word))
}
