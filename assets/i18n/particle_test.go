package i18n

import (
	"regexp"
	"strings"
	"testing"
)

// TestParticleAfter reads words of every kind klab puts before a particle
// and checks the form of each particle; a row gives the expected 을/를,
// 이/가, 은/는, 과/와, (으)로 and copula forms joined by spaces.
func TestParticleAfter(t *testing.T) {
	const (
		vowel     = "를 가 는 와 로 "
		rieul     = "을 이 은 과 로 이"
		consonant = "을 이 은 과 으로 이"
		unknown   = "을(를) 이(가) 은(는) 과(와) (으)로 (이)"
	)
	tests := []struct {
		name, word, want string
	}{
		// Hangul: the final consonant (받침) decides; ㄹ only changes (으)로.
		{"hangul vowel", "클러스터", vowel},
		{"hangul vowel 2", "노드", vowel},
		{"hangul consonant", "레슨", consonant},
		{"hangul consonant ㅁ", "이름", consonant},
		{"hangul double final", "닭", consonant},
		{"hangul ㄹ", "서울", rieul},
		{"hangul ㄹ 2", "파일", rieul},
		{"jamo consonant", "ㄱ", consonant},
		{"jamo ㄹ", "ㄹ", rieul},
		{"jamo vowel", "ㅏ", vowel},

		// Latin words, read as Korean loanword spelling reads them.
		{"klab 클랩", "klab", consonant},
		{"web 웹", "web", consonant},
		{"quorum 쿼럼", "quorum", consonant},
		{"kubelet 큐블릿", "kubelet", consonant},
		{"app 앱", "app", consonant},
		{"stack 스택", "stack", consonant},
		{"timeout 타임아웃", "timeout", consonant},
		{"webhook 웹훅", "webhook", consonant},
		{"main 메인", "main", consonant},
		{"staging 스테이징", "staging", consonant},
		{"kube-system 시스템", "kube-system", consonant},
		{"name 네임", "name", consonant},
		{"line 라인", "line", consonant},
		{"kubectl ㄹ", "kubectl", rieul},
		{"shell 셸", "shell", rieul},
		{"role 롤", "role", rieul},
		{"table 테이블", "table", rieul},
		{"etcd 이티시디", "etcd", vowel},
		{"raft 래프트", "raft", vowel},
		{"demo 데모", "demo", vowel},
		{"docker 도커", "docker", vowel},
		{"master 마스터", "master", vowel},
		{"pod 파드", "pod", vowel},
		{"log 로그", "log", vowel},
		{"nginx 엔진엑스", "nginx", vowel},
		{"redis 레디스", "redis", vowel},
		{"node 노드", "node", vowel},
		{"kube 큐브", "kube", vowel},
		{"object 오브젝트", "object", vowel},
		{"loop 루프", "loop", vowel},
		{"proxy 프록시", "proxy", vowel},
		{"tree 트리", "tree", vowel},
		{"acme 애크미", "acme", vowel},
		{"camelCase NotReady", "NotReady", vowel},
		{"camelCase ExternalName", "ExternalName", consonant},

		// Acronyms and runs without a vowel are spelled letter by letter.
		{"API 에이피아이", "API", vowel},
		{"URL 유알엘", "URL", rieul},
		{"DNS 디엔에스", "DNS", vowel},
		{"RAM 알에이엠", "RAM", consonant},
		{"kubeAPI", "kubeAPI", vowel},
		{"etcdURL", "etcdURL", rieul},
		{"ctl 시티엘", "ctl", rieul},
		{"db 디비", "db", vowel},
		{"svc 에스브이씨", "svc", vowel},
		{"single letter x", "x", vowel},
		{"single letter n", "n", consonant},
		{"single letter L", "L", rieul},
		{"k8s 케이에이츠", "k8s", vowel},
		{"HTTP 에이치티티피", "HTTP", vowel},
		{"HTML 에이치티엠엘", "HTML", rieul},
		{"HOME 홈", "HOME", consonant},
		{"KLAB_HOME 홈", "KLAB_HOME", consonant},
		{"YAML 야믈", "YAML", rieul},
		{"JSON 제이슨", "JSON", consonant},
		{"ETCD", "ETCD", vowel},
		{"check 체크", "klab lessons check", vowel},
		{"deck 덱", "deck", consonant},

		// Digits: the last run is a Sino-Korean number.
		{"0 영", "0", consonant},
		{"1 일", "1", rieul},
		{"2 이", "2", vowel},
		{"3 삼", "3", consonant},
		{"4 사", "4", vowel},
		{"5 오", "5", vowel},
		{"6 육", "6", consonant},
		{"7 칠", "7", rieul},
		{"8 팔", "8", rieul},
		{"9 구", "9", vowel},
		{"10 십", "10", consonant},
		{"12 십이", "12", vowel},
		{"20 이십", "20", consonant},
		{"100 백", "100", consonant},
		{"1000 천", "1000", consonant},
		{"1,000 천", "1,000", consonant},
		{"10000 만", "10000", consonant},
		{"10^12 조", "1000000000000", vowel},
		{"007 칠", "007", rieul},
		{"00 영", "00", consonant},
		{"master-1", "master-1", rieul},
		{"etcd-2", "etcd-2", vowel},
		{"node3", "node3", consonant},
		{"v1.30 삼십", "v1.30", consonant},
		{"1.5 오", "1.5", vowel},
		{"10.0.0.1", "10.0.0.1", rieul},
		{"ipv4", "ipv4", vowel},

		// Closing quotes, brackets and punctuation are looked through.
		{"quoted klab", `"klab"`, consonant},
		{"quoted etcd", `"etcd"`, vowel},
		{"single quotes", "'web'", consonant},
		{"backticks", "`klab up --name demo`", vowel},
		{"brackets", "(master-1)", rieul},
		{"angle", "svc/<이름>", consonant},
		{"curly quotes", "“레슨”", consonant},
		{"korean quotes", "「노드」", vowel},
		{"nested", `("quorum").`, consonant},
		{"path", "default/web", consonant},
		{"gloss after hangul", "요청(request)", consonant},
		{"gloss after hangul vowel", "데이터(data)", vowel},
		{"gloss after name", "--name(또는 KLAB_CLUSTER)", consonant},
		{"gloss in brackets", "파드[pod]", vowel},
		{"nested gloss", "노드(node (worker))", vowel},
		{"bracket apart", "노드 (worker)", vowel},
		{"bracket apart 2", "노드 (master-1)", rieul},

		// What cannot be read keeps both forms.
		{"empty", "", unknown},
		{"only quotes", `""`, unknown},
		{"symbol", "/registry/", unknown},
		{"han", "漢字", unknown},
		{"kana", "かな", unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			for p := Particle(0); p < particleCount; p++ {
				if p > 0 {
					got += " "
				}
				got += p.After(tt.word)
			}
			if got != tt.want {
				t.Errorf("particles after %q = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
}

func TestAttach(t *testing.T) {
	tests := []struct {
		word string
		p    Particle
		want string
	}{
		{"klab", Object, "klab을"},
		{"quorum", Object, "quorum을"},
		{"web", Subject, "web이"},
		{"nginx", Subject, "nginx가"},
		{"서울", Toward, "서울로"},
		{"레슨", Toward, "레슨으로"},
		{"master-1", Toward, "master-1로"},
		{"master-3", Toward, "master-3으로"},
		{"etcd-2", And, "etcd-2와"},
		{"raft", Copula, "raft"},
		{"quorum", Copula, "quorum이"},
	}
	for _, tt := range tests {
		if got := Attach(tt.word, tt.p); got != tt.want {
			t.Errorf("Attach(%q, %d) = %q, want %q", tt.word, tt.p, got, tt.want)
		}
	}
}

// TestFormatParticles renders formats the way T does: markers in the format
// agree with the text before them, including arguments, while a marker that
// arrives inside an argument is left alone.
func TestFormatParticles(t *testing.T) {
	tests := []struct {
		name, format string
		args         []any
		want         string
	}{
		{"quoted name", "클러스터 %q을(를) 멈췄습니다", []any{"klab"}, `클러스터 "klab"을 멈췄습니다`},
		{"vowel name", "클러스터 %q을(를) 멈췄습니다", []any{"demo"}, `클러스터 "demo"를 멈췄습니다`},
		{"subject", "서비스 %s이(가) 없습니다", []any{"web"}, "서비스 web이 없습니다"},
		{"subject vowel", "서비스 %s이(가) 없습니다", []any{"nginx"}, "서비스 nginx가 없습니다"},
		{"reversed pair", "%s를(을)", []any{"quorum"}, "quorum을"},
		{"indexed", "%[2]s와(과) %[1]s", []any{"b", "master-3"}, "master-3과 b"},
		{"toward ㄹ", "--name %s(으)로", []any{"master-1"}, "--name master-1로"},
		{"copula", "%q(이)라는 레슨", []any{"raft"}, `"raft"라는 레슨`},
		{"copula consonant", "%q(이)라는 레슨", []any{"quorum"}, `"quorum"이라는 레슨`},
		{"number", "(%d은(는) 안 됩니다)", []any{0}, "(0은 안 됩니다)"},
		{"number vowel", "(%d은(는) 안 됩니다)", []any{2}, "(2는 안 됩니다)"},
		{"empty argument", "klab start%s(으)로", []any{""}, "klab start로"},
		{"filled argument", "klab start%s(으)로", []any{" --name lab"}, "klab start --name lab으로"},
		{"after literal", "레슨을(를)", nil, "레슨을"},
		{"unknown", "%s을(를)", []any{"/registry/"}, "/registry/을(를)"},
		{"marker in argument", "%s을(를) 썼습니다", []any{"a을(를)b"}, "a을(를)b를 썼습니다"},
		{"no marker keeps percent", "100%%", nil, "100%%"},
		{"several", "%s이(가) %s와(과) 분리되었습니다", []any{"master-1", "etcd-2"}, "master-1이 etcd-2와 분리되었습니다"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := format(tt.format, tt.args); got != tt.want {
				t.Errorf("format(%q, %v) = %q, want %q", tt.format, tt.args, got, tt.want)
			}
		})
	}
}

// verb matches a format verb, and the closing marks a particle may follow.
var verb = regexp.MustCompile(`%(?:\[\d+\])?[-+# 0]*[0-9.]*[a-zA-Z]["'` + "`" + `)\]」』”’]*`)

// bareParticle matches a particle written in one form only, at the start of
// the text after an argument: the subject's 이 and 가 only when no Hangul
// follows (이므로 and 가지 are not particles), the copula's 이라, 라, 이나,
// 나 in any case.
var bareParticle = regexp.MustCompile(`^(?:을|를|은|는|와|과|으로|로|이라|라|이나|나|(?:이|가)(?:[^가-힣]|$))`)

// TestArgumentParticlesUseMarkers fails when a Korean message puts a particle
// after an argument in one fixed form: whatever the argument, the form must
// be picked when the message renders (을(를), not 를).
func TestArgumentParticlesUseMarkers(t *testing.T) {
	checked := 0
	for _, key := range Keys(Korean) {
		msg := catalogues[Korean][key]
		for _, loc := range verb.FindAllStringIndex(msg, -1) {
			after := msg[loc[1]:]
			if hasMarkerPrefix(after) {
				checked++
				continue
			}
			if m := bareParticle.FindString(after); m != "" {
				m = strings.TrimRightFunc(m, func(r rune) bool { return r < '가' || r > '힣' })
				t.Errorf("%s: particle %q after argument %q is fixed; write it undecided (%s) so that it agrees with the argument",
					key, m, msg[loc[0]:loc[1]], suggest(m))
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d particles after arguments found; is the verb pattern still right?", checked)
	}
}

func hasMarkerPrefix(s string) bool {
	for _, m := range markers {
		if strings.HasPrefix(s, m.text) {
			return true
		}
	}
	return false
}

func suggest(particle string) string {
	for _, f := range forms {
		if strings.HasPrefix(particle, f.consonant) && f.consonant != "" || f.vowel != "" && strings.HasPrefix(particle, f.vowel) {
			return f.marker
		}
	}
	return "(이)"
}

// literal matches a particle written right after a Latin word or a number in
// the catalogue's own text (klab은, etcd를, 3대로 is not one: 대 is Hangul).
var literal = regexp.MustCompile("[A-Za-z0-9][\"'`)\\]」』”’]*(을|를|은|는|와|과|으로|로|이|가)(?:[^가-힣]|$)")

// TestLiteralParticlesAgree checks the particles a translator wrote after
// Latin words and numbers (klab은, etcd를, kubectl로) against the helper's
// reading: where they disagree, either the text or the rules are wrong.
func TestLiteralParticlesAgree(t *testing.T) {
	checked := 0
	for _, key := range Keys(Korean) {
		// Arguments are checked above; hide them from the literal pattern.
		msg := verb.ReplaceAllString(catalogues[Korean][key], "\x00")
		for _, loc := range literal.FindAllStringSubmatchIndex(msg, -1) {
			written := msg[loc[2]:loc[3]]
			p := particleOf(written)
			want := p.After(msg[:loc[2]])
			checked++
			if written != want {
				t.Errorf("%s: %q is followed by %s; klab reads it as wanting %s",
					key, tail(msg[:loc[2]], 16), written, want)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d particles after Latin words found; is the pattern still right?", checked)
	}
}

func particleOf(form string) Particle {
	for p, f := range forms {
		if form == f.consonant || form == f.vowel {
			return Particle(p)
		}
	}
	panic("not a particle: " + form)
}

// tail returns the last n characters of s.
func tail(s string, n int) string {
	r := []rune(s)
	return string(r[max(0, len(r)-n):])
}
