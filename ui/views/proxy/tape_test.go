package proxy

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/klab-dev/klab/cluster/proxy/proxier"
	"github.com/klab-dev/klab/ui/internal/uitest"
)

// TestTrafficIsTaped sends a burst of traffic in a live view, recording
// what its sources tell it as the workspace does (the tape, then Update),
// and plays the tapes into a view that follows nothing: while the burst
// runs and after it, the replayed view draws the chart as the live one did,
// and a keyframe taken after the burst brings the chart back on its own.
func TestTrafficIsTaped(t *testing.T) {
	for _, lang := range uitest.Langs {
		t.Run(string(lang), func(t *testing.T) {
			c := uitest.Setup(t, lang)
			live := NewWith(c, nil)
			live.SetSize(120, 40)
			live.Start(context.Background(), fixtureInfo())
			var tapes [][]byte
			send := func(msg tea.Msg) {
				if live.Owns(msg) {
					if b := live.Tape(msg); b != nil {
						tapes = append(tapes, b)
					}
				}
				live.Update(msg)
			}
			send(connectedMsg{epoch: live.epoch, cluster: newFake(t)})
			send(servicesMsg{epoch: live.epoch, services: buildServices(fixtureObjects(false))})
			send(subscribedMsg{feed: live.feed})
			send(rulesMsg{feed: live.feed, statuses: statusesIn(proxier.ModeIPTables), rules: readRules(t, "iptables-before")})
			downs := 0
			for ; live.selected != "default/web"; downs++ {
				live.Update(uitest.Key("down"))
			}
			live.Update(uitest.Key("t"))
			rs := results(proxier.ModeIPTables, 100, 25)
			send(trafficMsg{run: live.run, results: rs[:40]})
			midTapes := len(tapes)
			mid := live.View()
			send(trafficMsg{run: live.run, results: rs[40:], done: true})
			after := live.View()
			if !strings.Contains(mid, "40/100") || strings.Contains(after, "40/100") {
				t.Fatalf("the live chart mid-burst and after:\n%s\n---\n%s", mid, after)
			}

			replay := func(tapes [][]byte) *View {
				v := NewWith(c, nil)
				v.SetSize(120, 40)
				v.Replay(fixtureInfo())
				for _, b := range tapes {
					if err := v.Play(b); err != nil {
						t.Fatalf("play %s: %v", b, err)
					}
				}
				for range downs {
					v.Update(uitest.Key("down"))
				}
				return v
			}
			if got := replay(tapes[:midTapes]).View(); got != mid {
				t.Errorf("replayed mid-burst:\n%s\n--- live:\n%s", got, mid)
			}
			r := replay(tapes)
			if got := r.View(); got != after {
				t.Errorf("replayed after the burst:\n%s\n--- live:\n%s", got, after)
			}
			if got := replay([][]byte{r.Keyframe()}).View(); got != after {
				t.Errorf("from a keyframe after the burst:\n%s\n--- live:\n%s", got, after)
			}
		})
	}
}
