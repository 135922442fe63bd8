package i18n

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Korean particle takes one form after a syllable that ends in a
// consonant (a final consonant, 받침) and another after one that ends in a
// vowel; (으)로 also treats a final ㄹ as a vowel. So the form depends on how
// the word before it is read aloud, which for a name such as "klab", "etcd-2"
// or "API" is a matter of how a Korean speaker reads Latin letters and
// digits. finalSound decides that, by these rules, in this order:
//
//  1. Closing quotes and sentence punctuation are looked through: `"klab"`
//     is read as klab. So is a closing bracket, unless it closes a gloss
//     right after a word: 요청(request) is read as 요청 (see lastWord).
//  2. A Hangul syllable: its final consonant, if any (마스터 none, 클러스터
//     none, 노드 none, 레슨 ㄴ, 이름 ㅁ, 일 ㄹ). A lone jamo is read by its
//     name (ㄱ 기역, ㅏ 아).
//  3. Digits: the last run of digits is read as a Sino-Korean number, which
//     ends in the last non-zero digit (1 일 ㄹ, 2 이, 3 삼 ㅁ, 4 사, 5 오,
//     6 육 ㄱ, 7 칠 ㄹ, 8 팔 ㄹ, 9 구) or, after trailing zeros, in the unit they
//     make (10 십, 100 백, 1000 천, 10⁴ 만, 10⁸ 억, 10¹² 조, 10¹⁶ 경); 0 is 영.
//     Commas between digits are ignored; digits after a point are a number
//     too (1.30 is 일 점 삼십), as versions and addresses are read.
//  4. Latin letters: the last run of letters is spelled out letter by letter
//     when it is a single letter, ends in two or three capitals (API,
//     kubeAPI, URL) or has no vowel letter (ctl, svc, db, HTTP); then its
//     last letter's name decides, and only L 엘, M 엠, N 엔 and R 알 end in a
//     consonant. Longer capitals with a vowel are a word (HOME 홈, YAML 야믈,
//     JSON 제이슨). A word is read the way Korean loanword spelling reads
//     English endings:
//     - m, n, ng end in ㅁ, ㄴ, ㅇ (quorum 쿼럼, main 메인, staging 스테이징);
//     - l ends in ㄹ (kubectl, shell 셸), and so does a final "le" (table);
//     - a silent e leaves the consonant before it: after m or n following a
//     vowel it ends in ㅁ, ㄴ (name 네임, line 라인), after l in ㄹ (role
//     롤), anything else ends in a vowel (node 노드, kube 큐브);
//     - p, t, k, ck, b, c after a single vowel letter become a final
//     consonant (klab 클랩, web 웹, kubelet 큐블릿, app 앱, stack 스택), as
//     do "out" and "ook" (timeout 타임아웃, webhook 웹훅); after anything
//     else they take a vowel (raft 래프트, object 오브젝트, loop 루프), and
//     so does check (체크), the one common word that breaks the rule;
//     - every other ending reads as a vowel: r (docker 도커, server 서버),
//     d and g (pod 파드, etcd, log 로그), s, x, z, f, v, h, j, q, w, y and
//     the vowels themselves.
//  5. Anything else (symbols, other scripts, nothing at all) is unknown, and
//     the particle keeps both forms, as Korean writes when it cannot tell:
//     을(를).
//
// These rules are deliberately few so that a reader can predict them; they
// read the names klab shows (clusters, members, nodes, pods, services,
// lessons) as a Korean engineer would, and where English spelling is too
// irregular (hub is 허브 though club is 클럽, big is 빅 though log is 로그)
// they pick the commoner reading.
type sound int

const (
	soundUnknown   sound = iota // cannot tell: both forms are shown
	soundVowel                  // ends in a vowel: 를, 가, 는, 와, 로
	soundRieul                  // ends in ㄹ: 을, 이, 은, 과, but 로
	soundConsonant              // ends in any other final consonant: 을, 이, 은, 과, 으로
)

// closing holds what finalSound looks through at the end of a word; a
// closing bracket is looked through too, unless it ends a gloss (see
// glossStart).
const closing = "\"'`}>.,!?;:…”’」』》〉】"

// lastWord strips from text what a reader looks through before a particle:
// closing quotes and punctuation, and closing brackets. A bracketed aside
// that glosses the word right before it, as in 요청(request) or 파드(pod), is
// dropped whole, since a particle agrees with the glossed word, not the
// gloss (요청(request)을); a bracket that stands apart, after a space or at
// the start, is looked into: (master-1)로.
func lastWord(text string) string {
	for {
		text = strings.TrimRight(text, closing)
		if !strings.HasSuffix(text, ")") && !strings.HasSuffix(text, "]") {
			return text
		}
		if open := glossStart(text); open > 0 {
			text = text[:open]
		} else {
			text = text[:len(text)-1]
		}
	}
}

// glossStart returns where the bracket that text ends with opens, when a
// letter or digit comes right before it; otherwise -1.
func glossStart(text string) int {
	shut := text[len(text)-1]
	open := byte('(')
	if shut == ']' {
		open = '['
	}
	depth := 0
	for i := len(text) - 1; i >= 0; i-- {
		switch text[i] {
		case shut:
			depth++
		case open:
			if depth--; depth == 0 {
				r, _ := utf8.DecodeLastRuneInString(text[:i])
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					return i
				}
				return -1
			}
		}
	}
	return -1
}

// finalSound tells how text ends when read aloud in Korean; see sound for
// the rules.
func finalSound(text string) sound {
	text = lastWord(text)
	r, _ := utf8.DecodeLastRuneInString(text)
	switch {
	case r >= 0xAC00 && r <= 0xD7A3: // a precomposed Hangul syllable
		switch (r - 0xAC00) % 28 { // its final consonant (종성) index
		case 0:
			return soundVowel
		case 8:
			return soundRieul
		}
		return soundConsonant
	case r == 'ㄹ':
		return soundRieul // 리을
	case r >= 'ㄱ' && r <= 'ㅎ':
		return soundConsonant // 기역, 니은, …: every consonant's name ends in itself
	case r >= 'ㅏ' && r <= 'ㅣ':
		return soundVowel
	case r >= '0' && r <= '9':
		return numberSound(text)
	case isLatin(r):
		end := len(text)
		start := end
		for start > 0 && isLatin(rune(text[start-1])) {
			start--
		}
		return latinSound(text[start:end])
	}
	return soundUnknown
}

func isLatin(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

func isVowelLetter(b byte) bool { return strings.IndexByte("aeiou", b) >= 0 }

// numberSound reads the run of digits (and grouping commas) that text ends
// with as a Sino-Korean number.
func numberSound(text string) sound {
	var digits []byte
	for i := len(text) - 1; i >= 0; i-- {
		c := text[i]
		if c == ',' && i > 0 && text[i-1] >= '0' && text[i-1] <= '9' {
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits = append(digits, c) // reversed: digits[0] is the last digit
	}
	zeros := 0
	for zeros < len(digits) && digits[zeros] == '0' {
		zeros++
	}
	switch {
	case zeros == len(digits): // 0, 00: 영
		return soundConsonant
	case zeros == 0:
		switch digits[0] {
		case '1', '7', '8': // 일, 칠, 팔
			return soundRieul
		case '3', '6': // 삼, 육
			return soundConsonant
		}
		return soundVowel // 이, 사, 오, 구
	case zeros >= 12 && zeros < 16: // …조
		return soundVowel
	}
	return soundConsonant // 십, 백, 천, 만, 억, 경
}

// latinSound reads a run of Latin letters; see sound for the rules.
func latinSound(run string) sound {
	caps := 0
	for caps < len(run) && run[len(run)-1-caps] >= 'A' && run[len(run)-1-caps] <= 'Z' {
		caps++
	}
	w := strings.ToLower(run)
	if caps >= 2 {
		w = w[len(w)-caps:] // kubeAPI: the capitals are a word of their own
		if caps <= 3 {
			return letterName(w[len(w)-1])
		}
	}
	if len(w) == 1 || !strings.ContainsAny(w, "aeiouy") {
		return letterName(w[len(w)-1])
	}
	if strings.HasSuffix(w, "check") {
		return soundVowel // 체크, the one common exception to the ck rule
	}
	n := len(w)
	last := w[n-1]
	switch last {
	case 'm', 'n':
		return soundConsonant
	case 'l':
		return soundRieul
	case 'g':
		if w[n-2] == 'n' { // -ng: ㅇ
			return soundConsonant
		}
		return soundVowel
	case 'e':
		prev := w[n-2]
		switch {
		case isVowelLetter(prev) || prev == 'y':
			return soundVowel // tree, blue
		case prev == 'l':
			return soundRieul // role, table
		case (prev == 'm' || prev == 'n') && n >= 3 && isVowelLetter(w[n-3]):
			return soundConsonant // name, line
		}
		return soundVowel
	case 'p', 't', 'k', 'b', 'c':
		if strings.HasSuffix(w, "out") || strings.HasSuffix(w, "ook") {
			return soundConsonant
		}
		i := n - 2 // the letter before the final consonant
		if w[i] == last || last == 'k' && w[i] == 'c' {
			i-- // app, stack: a doubled consonant is one sound
		}
		if i >= 0 && isVowelLetter(w[i]) && (i == 0 || !isVowelLetter(w[i-1])) {
			return soundConsonant
		}
		return soundVowel
	}
	return soundVowel
}

// letterName reads a Latin letter by its Korean name: 에이, 비, 씨, …; only
// 엘, 엠, 엔 and 알 end in a consonant.
func letterName(c byte) sound {
	switch c {
	case 'l', 'r':
		return soundRieul
	case 'm', 'n':
		return soundConsonant
	}
	return soundVowel
}
