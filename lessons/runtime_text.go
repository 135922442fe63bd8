package lessons

import (
	"strings"

	"github.com/klab-dev/klab/assets/i18n"
)

// The runtimes a lesson's text can speak of apart, named as klab up's
// --runtime names them.
const (
	RuntimeDocker = "docker"
	RuntimeLocal  = "local"
)

// runtimeFence opens and closes a passage that holds on one runtime only,
// in a lesson's Markdown:
//
//	::: docker
//	`docker ps` lists the pod's sandbox and its container.
//	:::
//
// Outside such passages, text holds on both runtimes. Passages do not
// nest, and the Korean and the English text of a field have the same
// passages in the same order.
const runtimeFence = ":::"

// runtimePart is a piece of a text: common to both runtimes (runtime
// empty) or a passage of one.
type runtimePart struct {
	runtime string
	text    string
}

// fenceError says what is wrong with a text's passages, and on which of
// its lines (from 0).
type fenceError struct {
	line int
	msg  i18n.Message
}

// splitRuntimes cuts s into its common text and its runtime passages.
func splitRuntimes(s string) ([]runtimePart, *fenceError) {
	var parts []runtimePart
	var cur strings.Builder
	open, openedAt := "", 0
	flush := func(rt string) {
		if cur.Len() > 0 {
			parts = append(parts, runtimePart{runtime: rt, text: cur.String()})
			cur.Reset()
		}
	}
	lines := strings.SplitAfter(s, "\n")
	for i, line := range lines {
		fence, ok := strings.CutPrefix(strings.TrimSpace(line), runtimeFence)
		if !ok {
			cur.WriteString(line)
			continue
		}
		rt := strings.TrimSpace(fence)
		switch {
		case rt == "" && open == "":
			return nil, &fenceError{i, i18n.M("lessons.err.runtime-stray")}
		case rt == "":
			flush(open)
			open = ""
		case open != "":
			return nil, &fenceError{i, i18n.M("lessons.err.runtime-nested", rt, open, openedAt+1)}
		case rt != RuntimeDocker && rt != RuntimeLocal:
			return nil, &fenceError{i, i18n.M("lessons.err.runtime-unknown", rt, RuntimeDocker+", "+RuntimeLocal)}
		default:
			flush("")
			open, openedAt = rt, i
		}
	}
	if open != "" {
		return nil, &fenceError{openedAt, i18n.M("lessons.err.runtime-unclosed", open)}
	}
	flush("")
	return parts, nil
}

// runtimesOf lists the runtimes of s's passages, in order.
func runtimesOf(parts []runtimePart) []string {
	var rts []string
	for _, p := range parts {
		if p.runtime != "" {
			rts = append(rts, p.runtime)
		}
	}
	return rts
}

// ForRuntime returns the text in language l as it reads on runtime rt:
// the common text and rt's passages, without the other runtime's. With
// rt empty (no cluster to ask, as klab lessons show), every passage is
// kept under a line that names its runtime.
func (b Bilingual) ForRuntime(l i18n.Lang, rt string) string {
	return forRuntime(b.Text(l), l, rt)
}

func forRuntime(s string, l i18n.Lang, rt string) string {
	if !strings.Contains(s, runtimeFence) {
		return s
	}
	parts, err := splitRuntimes(s)
	if err != nil {
		// The loader refuses such a text; one built by hand reads as
		// written.
		return s
	}
	var out strings.Builder
	for _, p := range parts {
		switch {
		case p.runtime == "" || p.runtime == rt:
			out.WriteString(p.text)
		case rt == "":
			if !strings.HasSuffix(out.String(), "\n\n") {
				out.WriteString("\n")
			}
			out.WriteString("*" + l.T("lessons.runtime.on-"+p.runtime) + "*\n\n")
			out.WriteString(p.text)
		}
	}
	return out.String()
}
