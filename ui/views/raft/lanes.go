package raft

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/ui/common"
	"github.com/klab-dev/klab/ui/labstate"
	"github.com/klab-dev/klab/ui/styles"
)

// The lanes are a sequence diagram drawn live: a lifeline under each
// member's box, and one row per recent message, an arrow from sender to
// receiver labelled with its type and term, newest at the bottom. Messages
// fade as the raft clock moves on, and leave after labstate.MessageTicks.

// canvas is one row of cells, each with its own style, rendered as runs.
type canvas struct {
	cells  []string
	styles []*lipgloss.Style
	sgr    *sgrCache
}

// sgrCache holds, per style, the escape codes it puts before and after a
// text: a frame has hundreds of styled runs and a handful of styles, and a
// style's Render costs far more than joining three strings. It lives for
// one frame.
type sgrCache struct {
	codes map[*lipgloss.Style][2]string
	faded map[fadeKey]*lipgloss.Style
	edges map[*lipgloss.Style]*lipgloss.Style
}

type fadeKey struct {
	base  *lipgloss.Style
	level int
}

func newSGRCache() *sgrCache {
	return &sgrCache{
		codes: map[*lipgloss.Style][2]string{},
		faded: map[fadeKey]*lipgloss.Style{},
		edges: map[*lipgloss.Style]*lipgloss.Style{},
	}
}

// wrap renders text in st as st.Render would. Only styles without width,
// padding, margins or borders may be cached so (the lanes' colours).
func (c *sgrCache) wrap(st *lipgloss.Style, text string) string {
	codes := c.codesOf(st)
	return codes[0] + text + codes[1]
}

// codesOf returns the codes st puts before and after a text.
func (c *sgrCache) codesOf(st *lipgloss.Style) [2]string {
	codes, ok := c.codes[st]
	if !ok {
		// A style that changes its text (a transform) cannot be split
		// so; the lanes' styles are colours and weights only, and such a
		// style would be drawn plain.
		const mark = "\x00"
		if before, after, ok := strings.Cut(st.Render(mark), mark); ok {
			codes = [2]string{before, after}
		}
		c.codes[st] = codes
	}
	return codes
}

// edge returns the style a box's border is drawn in.
func (c *sgrCache) edge(box *lipgloss.Style) *lipgloss.Style {
	if e, ok := c.edges[box]; ok {
		return e
	}
	e := lipgloss.NewStyle().Foreground(box.GetBorderTopForeground()).Background(box.GetBorderTopBackground())
	c.edges[box] = &e
	return &e
}

// fade picks the style of a message by its age in ticks: fresh, as it is,
// or faded.
func (c *sgrCache) fade(s *styles.Styles, base *lipgloss.Style, age float64) *lipgloss.Style {
	level := 1
	switch {
	case age < 3:
		level = 0
	case age > labstate.MessageTicks/2:
		level = 2
	}
	if level == 1 {
		return base
	}
	k := fadeKey{base, level}
	if st, ok := c.faded[k]; ok {
		return st
	}
	var st lipgloss.Style
	if level == 0 {
		st = base.Inherit(s.Raft.Fresh)
	} else {
		st = base.Inherit(s.Raft.Faded)
	}
	c.faded[k] = &st
	return &st
}

func newCanvas(width int, sgr *sgrCache) *canvas {
	c := &canvas{cells: make([]string, width), styles: make([]*lipgloss.Style, width), sgr: sgr}
	for i := range c.cells {
		c.cells[i] = " "
	}
	return c
}

func (c *canvas) set(x int, s string, st *lipgloss.Style) {
	if x >= 0 && x < len(c.cells) {
		c.cells[x], c.styles[x] = s, st
	}
}

// text writes s from x on. A wide character (a Korean word in a label)
// takes two cells: the second holds nothing, so the row keeps its width.
func (c *canvas) text(x int, s string, st *lipgloss.Style) {
	for _, r := range s {
		w := 1
		if r >= 0x80 {
			w = ansi.StringWidth(string(r))
		}
		c.set(x, string(r), st)
		if w == 2 {
			c.set(x+1, "", st)
		}
		x += max(w, 1)
	}
}

func (c *canvas) String() string {
	var b strings.Builder
	b.Grow(2 * len(c.cells))
	for i := 0; i < len(c.cells); {
		j := i
		st := c.styles[i]
		var codes [2]string
		if st != nil {
			codes = c.sgr.codesOf(st)
		}
		b.WriteString(codes[0])
		for j < len(c.cells) && c.styles[j] == st {
			b.WriteString(c.cells[j])
			j++
		}
		b.WriteString(codes[1])
		i = j
	}
	return b.String()
}

// lanes draws the message diagram in width×height cells. centers are the
// x positions of the members' lifelines, in st.Members' order.
func lanes(s *styles.Styles, sgr *sgrCache, st *labstate.State, centers []int, width, height int) []string {
	if height <= 0 {
		return nil
	}
	lane := &s.Raft.Lane
	// One canvas serves every row: each row is drawn on it afresh and
	// turned into its string before the next.
	c := newCanvas(width, sgr)
	lifelines := func() *canvas {
		for i := range c.cells {
			c.cells[i], c.styles[i] = " ", nil
		}
		for _, x := range centers {
			c.set(x, "│", lane)
		}
		return c
	}

	var rows []string
	// Heartbeats: one row per leader–follower pair while there is room
	// for them and a few messages; otherwise one summary line.
	beats := activeBeats(st)
	msgs := groupMessages(st.Messages)
	switch {
	case len(beats) == 0:
	case height-len(beats) >= min(len(msgs), 3):
		for _, h := range beats {
			rows = append(rows, beatRow(s, st, h, centers, lifelines()))
		}
	default:
		rows = append(rows, beatSummary(s, beats, width))
	}
	room := height - len(rows)
	if len(msgs) > room {
		msgs = msgs[len(msgs)-room:]
	}
	for _, g := range msgs {
		rows = append(rows, messageRow(s, st, g, centers, lifelines()))
	}
	for len(rows) < height {
		rows = append(rows, lifelines().String())
	}
	return rows
}

// activeBeats returns the heartbeat pairs still on screen, in member order
// of their followers.
func activeBeats(st *labstate.State) []*labstate.Heartbeat {
	var out []*labstate.Heartbeat
	for _, m := range st.Members {
		for i := range st.Heartbeats {
			if h := &st.Heartbeats[i]; h.Follower == m.Name {
				out = append(out, h)
			}
		}
	}
	return out
}

// group is a run of identical messages (a probe repeated, a resent vote),
// drawn as one row with a count.
type group struct {
	labstate.Message
	count int
}

func groupMessages(msgs []labstate.Message) []group {
	var out []group
	for _, m := range msgs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.Type == m.Type && last.From == m.From && last.To == m.To && last.Term == m.Term &&
				last.Reject == m.Reject && last.Lost == m.Lost && last.Received == m.Received {
				last.Message, last.count = m, last.count+1
				continue
			}
		}
		out = append(out, group{Message: m, count: 1})
	}
	return out
}

// msgStyle colours a message by its family.
func msgStyle(s *styles.Styles, typ string) *lipgloss.Style {
	switch typ {
	case "MsgVote", "MsgVoteResp", "MsgPreVote", "MsgPreVoteResp", "MsgTimeoutNow":
		return &s.Raft.MsgVote
	case "MsgApp", "MsgAppResp":
		return &s.Raft.MsgApp
	case "MsgHeartbeat", "MsgHeartbeatResp":
		return &s.Raft.MsgBeat
	case "MsgSnap":
		return &s.Raft.MsgSnap
	}
	return &s.Raft.MsgOther
}

// labels returns a message's label from the most to the least detailed,
// for the widest that fits between its ends.
func labels(g group) []string {
	parts := []string{g.Type, fmt.Sprintf("t%d", g.Term)}
	switch g.Type {
	case "MsgApp":
		parts = append(parts, fmt.Sprintf("i%d", g.Index))
		if g.Entries > 0 {
			parts = append(parts, fmt.Sprintf("+%d", g.Entries))
		}
	case "MsgAppResp":
		parts = append(parts, fmt.Sprintf("i%d", g.Index))
		if g.Reject {
			parts = append(parts, "✗")
		}
	case "MsgVoteResp", "MsgPreVoteResp":
		if g.Reject {
			parts = append(parts, "✗")
		} else {
			parts = append(parts, "✓")
		}
	case "MsgVote", "MsgPreVote":
		parts = append(parts, fmt.Sprintf("i%d", g.Index))
	}
	if g.count > 1 {
		parts = append(parts, fmt.Sprintf("×%d", g.count))
	}
	var out []string
	for n := len(parts); n >= 1; n-- {
		out = append(out, strings.Join(parts[:n], " "))
	}
	short := strings.TrimPrefix(g.Type, "Msg")
	if len(parts) > 1 {
		out = append(out, short+" "+parts[1])
	}
	return append(out, short)
}

// arrow draws a message from lifeline x0 to x1 with the widest label that
// fits, and returns false when the two are the same lifeline.
func arrow(c *canvas, x0, x1 int, head string, opts []string, st *lipgloss.Style) {
	if x0 == x1 {
		return
	}
	lo, hi := min(x0, x1), max(x0, x1)
	for x := lo + 1; x < hi; x++ {
		c.set(x, "─", st)
	}
	if x1 > x0 {
		c.set(x0, "├", st)
		c.set(x1-1, head, st)
	} else {
		c.set(x0, "┤", st)
		c.set(x1+1, head, st)
	}
	room := hi - lo - 5 // the ends, the head and a space either side
	label := func(l string) {
		w := common.Width(l)
		start := lo + 1 + (hi-lo-1-w)/2
		c.set(start-1, " ", st)
		c.text(start, l, st)
		c.set(start+w, " ", st)
	}
	for _, l := range opts {
		if common.Width(l) <= room {
			label(l)
			return
		}
	}
	// Not even the short name fits: as much of it as does, so that a
	// narrow lane still says what went (ReadInd…), not a bare arrow.
	if len(opts) > 0 && room >= 3 {
		short := []rune(opts[len(opts)-1])
		label(string(short[:min(room-1, len(short))]) + "…")
	}
}

func messageRow(s *styles.Styles, st *labstate.State, g group, centers []int, c *canvas) string {
	from, to := st.Index(g.From), st.Index(g.To)
	if from < 0 || to < 0 {
		return c.String()
	}
	style := c.sgr.fade(s, msgStyle(s, g.Type), st.Age(g.Tick))
	head := "▷" // sent, not yet seen arriving
	if g.Received {
		head = "▶"
	}
	if centers[to] < centers[from] {
		head = "◁"
		if g.Received {
			head = "◀"
		}
	}
	opts := labels(g)
	if g.Lost != "" {
		style = c.sgr.fade(s, &s.Raft.MsgLost, st.Age(g.Tick))
		head = "✗"
		word := i18n.T("ui.raft.lost." + g.Lost)
		for i := range opts {
			opts[i] += " " + word
		}
		opts = append(opts, labels(g)...)
	}
	arrow(c, centers[from], centers[to], head, opts, style)
	return c.String()
}

func beatRow(s *styles.Styles, st *labstate.State, h *labstate.Heartbeat, centers []int, c *canvas) string {
	from, to := st.Index(h.Leader), st.Index(h.Follower)
	if from < 0 || to < 0 {
		return c.String()
	}
	style := c.sgr.fade(s, &s.Raft.MsgBeat, st.Age(h.LastTick))
	head := "▶"
	if centers[to] < centers[from] {
		head = "◀"
	}
	opts := []string{
		fmt.Sprintf("♥ MsgHeartbeat ×%d / Resp ×%d", h.Beats(), h.Responses()),
		fmt.Sprintf("♥ Heartbeat ×%d/%d", h.Beats(), h.Responses()),
		fmt.Sprintf("♥ ×%d/%d", h.Beats(), h.Responses()),
		"♥",
	}
	if h.Drops() > 0 {
		style = c.sgr.fade(s, &s.Raft.MsgLost, st.Age(h.LastTick))
		head = "✗"
		opts = append([]string{
			fmt.Sprintf("♥ MsgHeartbeat ×%d, %d ✗ %s", h.Beats(), h.Drops(), i18n.T("ui.raft.lost."+h.LostKind)),
			fmt.Sprintf("♥ ×%d, %d ✗", h.Beats(), h.Drops()),
		}, opts...)
	}
	arrow(c, centers[from], centers[to], head, opts, style)
	return c.String()
}

func beatSummary(s *styles.Styles, beats []*labstate.Heartbeat, width int) string {
	total, resps := 0, 0
	for _, h := range beats {
		total += h.Beats()
		resps += h.Responses()
	}
	line := i18n.T("ui.raft.beats-summary", beats[0].Leader, len(beats), total, resps, labstate.HeartbeatTicks)
	return common.Pad(s.Raft.MsgBeat.Render(common.Fit("♥ "+line, width)), width)
}
