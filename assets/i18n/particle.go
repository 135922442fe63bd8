package i18n

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Particle is a Korean particle (조사) whose form agrees with the sound the
// word before it ends in: 클러스터를 but 레슨을, 서비스 web이 but 파드 nginx가.
// Names reach Korean messages as arguments, so the form cannot be written in
// the catalogue; a catalogue writes the particle as Korean writes an
// undecided one, both forms with the optional part in brackets, and T picks
// the form from what the argument turned out to be:
//
//	"클러스터 %q을(를) 멈췄습니다"  →  클러스터 "klab"을 멈췄습니다
//	"서비스 %s이(가) 없습니다"      →  서비스 web이 없습니다, 서비스 nginx가 없습니다
//	"klab up --name %s(으)로"      →  klab up --name demo로, klab up --name lab1로
//	"%q(이)라는 레슨은 없습니다"     →  "quorum"이라는 레슨은, "raft"라는 레슨은
//
// Either order of the pair is accepted (을(를) or 를(을)). Only the catalogue's
// own text is read for these markers; an argument that happens to contain
// one is shown as it is. When the word's sound cannot be told (a symbol,
// another script), both forms stay, which is what a Korean reader expects.
type Particle int

// The particles whose form depends on the word before them.
const (
	Object  Particle = iota // 을/를, the object marker
	Subject                 // 이/가, the subject marker
	Topic                   // 은/는, the topic marker
	And                     // 과/와, "and", "with"
	Toward                  // 으로/로, "to", "by", "as"; 로 after ㄹ too
	Copula                  // 이/(nothing), the copula's stem before 라는, 나, 며, …
	particleCount
)

// forms holds, per particle, the form after a consonant, after a vowel, and
// the undecided marker a catalogue writes (and T shows when it cannot tell).
var forms = [particleCount]struct{ consonant, vowel, marker string }{
	Object:  {"을", "를", "을(를)"},
	Subject: {"이", "가", "이(가)"},
	Topic:   {"은", "는", "은(는)"},
	And:     {"과", "와", "과(와)"},
	Toward:  {"으로", "로", "(으)로"},
	Copula:  {"이", "", "(이)"},
}

// markers lists every spelling of an undecided particle a catalogue may use.
var markers = []struct {
	text string
	p    Particle
}{
	{"을(를)", Object}, {"를(을)", Object},
	{"이(가)", Subject}, {"가(이)", Subject},
	{"은(는)", Topic}, {"는(은)", Topic},
	{"과(와)", And}, {"와(과)", And},
	{"(으)로", Toward},
	{"(이)", Copula},
}

// After returns the form of p that agrees with how word ends when read
// aloud: Object.After("klab") is 을, Object.After("etcd") is 를,
// Toward.After("master-1") is 로 (일 ends in ㄹ). The rules are those of
// sound; a word whose ending cannot be told gets the undecided marker.
func (p Particle) After(word string) string {
	f := forms[p]
	switch finalSound(word) {
	case soundVowel:
		return f.vowel
	case soundRieul:
		if p == Toward {
			return f.vowel
		}
		return f.consonant
	case soundConsonant:
		return f.consonant
	}
	return f.marker
}

// Attach returns word followed by the form of p that agrees with it.
func Attach(word string, p Particle) string { return word + p.After(word) }

// sentinel stands for a particle marker while a message is formatted: a
// rune from Unicode's private use area, which neither catalogue text nor a
// name uses, so that a marker inside an argument is not mistaken for the
// catalogue's own.
func sentinel(p Particle) rune { return 0xF8F0 + rune(p) }

func isSentinel(r rune) (Particle, bool) {
	if r >= 0xF8F0 && r < 0xF8F0+rune(particleCount) {
		return Particle(r - 0xF8F0), true
	}
	return 0, false
}

// format renders a catalogue message, choosing each particle's form from
// the text it follows.
func format(msg string, args []any) string {
	if !strings.Contains(msg, ")") || !hasMarker(msg) {
		if len(args) == 0 {
			return msg
		}
		return fmt.Sprintf(msg, args...)
	}
	for _, m := range markers {
		msg = strings.ReplaceAll(msg, m.text, string(sentinel(m.p)))
	}
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	var b strings.Builder
	b.Grow(len(msg) + 8)
	for len(msg) > 0 {
		r, size := utf8.DecodeRuneInString(msg)
		msg = msg[size:]
		if p, ok := isSentinel(r); ok {
			b.WriteString(p.After(b.String()))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hasMarker(msg string) bool {
	for _, m := range markers {
		if strings.Contains(msg, m.text) {
			return true
		}
	}
	return false
}
