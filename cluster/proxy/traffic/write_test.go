package traffic

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// writeKeys are the catalogue keys Write renders.
var writeKeys = []string{
	"traffic.chiSquare.even",
	"traffic.chiSquare.exact",
	"traffic.chiSquare.none",
	"traffic.chiSquare.uneven",
	"traffic.col.count",
	"traffic.col.endpoint",
	"traffic.col.node",
	"traffic.col.pod",
	"traffic.col.share",
	"traffic.failures",
	"traffic.header",
	"traffic.header.node",
	"traffic.latency",
	"traffic.latency.none",
	"traffic.mode",
	"traffic.modes.item",
	"traffic.modes.switched",
	"traffic.noPods",
	"traffic.stage.connect",
	"traffic.stage.dial",
	"traffic.stage.http",
	"traffic.summary",
}

// catalogue holds Write's messages, per language, from assets/i18n.
var catalogue = map[i18n.Lang]map[string]string{}

// usedKeys records every key rendered, to find keys missing from the
// catalogue and keys nothing uses.
var usedKeys sync.Map

func TestMain(m *testing.M) {
	for _, l := range i18n.Langs {
		msgs := map[string]string{}
		for _, k := range writeKeys {
			if l.Has(k) {
				msgs[k] = l.T(k)
			}
		}
		catalogue[l] = msgs
	}
	translate = func(l i18n.Lang, key string, args ...any) string {
		usedKeys.Store(key, true)
		return l.T(key, args...)
	}
	os.Exit(m.Run())
}

// sampleReport is a run of 300 requests in iptables mode with one dead
// endpoint.
func sampleReport() *Report {
	r := &Report{
		Proxy: "127.0.0.1:10256", ProxyNode: "worker-1", Target: "10.96.0.10:80",
		Modes:    map[string]int{"iptables": 300},
		Requests: 300, Succeeded: 290, Failed: 10,
		Pods: []PodCount{
			{Pod: "web-7c9d-2xk4p", Namespace: "default", Node: "worker-1", PodIP: "10.244.1.5", Endpoint: "10.244.1.5:8080", Count: 104},
			{Pod: "web-7c9d-8qwze", Namespace: "default", Node: "worker-2", PodIP: "10.244.2.7", Endpoint: "10.244.2.7:8080", Count: 90},
			{Pod: "web-7c9d-tt5mn", Namespace: "default", Node: "worker-2", PodIP: "10.244.2.9", Endpoint: "10.244.2.9:8080", Count: 96},
		},
		Failures: []FailureCount{
			{Stage: StageConnect, Reason: "503 Service Unavailable: dial tcp 10.244.1.9:8080: connect: connection refused", Count: 8},
			{Stage: StageHTTP, Reason: "no answer within 5s", Count: 2},
		},
		Latency: LatencySummary{Min: 412 * time.Microsecond, P50: 1234567, P90: 2345678, P99: 9876543, Max: 5012345678},
		Elapsed: 1234567890,
	}
	for i := range r.Pods {
		r.Pods[i].Share = float64(r.Pods[i].Count) / float64(r.Succeeded)
	}
	r.ChiSquare = ChiSquareUniform(podCounts(r))
	return r
}

// variants cover every line Write can print.
func variants() map[string]*Report {
	even := sampleReport()
	even.Modes = map[string]int{"ipvs": 150, "userspace": 150}
	even.Succeeded, even.Failed, even.Failures = 300, 0, nil
	for i := range even.Pods {
		even.Pods[i].Count, even.Pods[i].Share = 100, 1.0/3
	}
	even.ChiSquare = ChiSquareUniform(podCounts(even))

	skewed := sampleReport()
	skewed.Pods[0].Count, skewed.Pods[1].Count, skewed.Pods[2].Count = 190, 50, 50
	for i := range skewed.Pods {
		skewed.Pods[i].Share = float64(skewed.Pods[i].Count) / float64(skewed.Succeeded)
	}
	skewed.ChiSquare = ChiSquareUniform(podCounts(skewed))

	down := &Report{Proxy: "127.0.0.1:10256", Target: "10.96.0.10:80", Modes: map[string]int{},
		Requests: 5, Failed: 5, Pods: []PodCount{},
		Failures: []FailureCount{{Stage: StageDial, Reason: "dial tcp 127.0.0.1:10256: connect: connection refused", Count: 5}},
		Elapsed:  3 * time.Millisecond, ChiSquare: ChiSquare{PValue: 1}}
	return map[string]*Report{"sample": sampleReport(), "even": even, "skewed": skewed, "down": down}
}

func TestWriteGolden(t *testing.T) {
	for name, r := range variants() {
		for _, l := range i18n.Langs {
			for _, style := range []string{"unicode", "ascii"} {
				t.Run(name+"/"+string(l)+"/"+style, func(t *testing.T) {
					var buf bytes.Buffer
					write := r.Write
					if style == "ascii" {
						write = r.WriteASCII
					}
					if err := write(&buf, l); err != nil {
						t.Fatal(err)
					}
					checkGolden(t, filepath.Join("testdata", "write", fmt.Sprintf("%s.%s.%s.golden", name, l, style)), buf.Bytes())
					checkTableAligned(t, buf.String(), l)
				})
			}
		}
	}
}

// TestWriteKeyLines pins the lines a reader looks for, so that a golden
// file rewritten with -update cannot quietly lose them.
func TestWriteKeyLines(t *testing.T) {
	tests := []struct {
		report string
		lang   i18n.Lang
		want   []string
	}{
		{"sample", i18n.English, []string{
			"Requests to 10.96.0.10:80 through kube-proxy 127.0.0.1:10256 on worker-1",
			"Proxy mode: iptables",
			"300 requests in 1.23s: 290 succeeded, 10 failed",
			"web-7c9d-2xk4p  worker-1  10.244.1.5:8080       104  35.9%  ████████████████████████",
			"  8  CONNECT to the service  503 Service Unavailable: dial tcp 10.244.1.9:8080: connect: connection refused",
			"Latency of successful requests: min 412µs, p50 1.23ms, p90 2.35ms, p99 9.88ms, max 5.01s",
			"Chi-square 1.02 (df 2), p = 0.600: as even as a fair random choice",
		}},
		{"sample", i18n.Korean, []string{
			"대상: 10.96.0.10:80 (worker-1 노드의 kube-proxy 127.0.0.1:10256 경유)",
			"요청 300건, 걸린 시간 1.23s: 성공 290건, 실패 10건",
			"파드            노드      엔드포인트       응답 수   비율",
			"  8  서비스로 CONNECT  503 Service Unavailable: dial tcp 10.244.1.9:8080: connect: connection refused",
			"카이제곱 1.02 (자유도 2), p = 0.600: 공정한 무작위 선택만큼 고르게 나뉘었습니다",
		}},
		{"even", i18n.English, []string{
			"The proxy mode changed during the run: ipvs for 150 requests, userspace for 150 requests",
			"Chi-square 0 (df 2), p = 1: split exactly evenly",
		}},
		{"skewed", i18n.Korean, []string{"카이제곱 135.17 (자유도 2), p = 4.4e-30: 우연이라 보기 어려울 만큼 치우쳤습니다. 일부 파드가 더 자주 선택됩니다"}},
		{"down", i18n.Korean, []string{"응답한 파드가 없습니다.", "지연 시간: 성공한 요청이 없어 잴 수 없습니다",
			"카이제곱 검정: 응답한 파드가 둘 이상이어야 합니다", "  5  kube-proxy 접속  dial tcp 127.0.0.1:10256"}},
	}
	reports := variants()
	for _, tt := range tests {
		t.Run(tt.report+"/"+string(tt.lang), func(t *testing.T) {
			var buf bytes.Buffer
			if err := reports[tt.report].Write(&buf, tt.lang); err != nil {
				t.Fatal(err)
			}
			for _, line := range tt.want {
				if !strings.Contains(buf.String(), line) {
					t.Errorf("output lacks %q:\n%s", line, buf.String())
				}
			}
		})
	}
}

// checkTableAligned checks that the pod table's columns line up on screen:
// without the bars, every row is as wide as the header, and the share
// column ends at the same cell in each.
func checkTableAligned(t *testing.T, out string, l i18n.Lang) {
	t.Helper()
	header := translate(l, "traffic.col.pod")
	var rows []string
	inTable := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, header):
			inTable = true
		case line == "":
			inTable = false
		}
		if inTable {
			rows = append(rows, strings.TrimRight(line, " █▏▎▍▌▋▊▉#"))
		}
	}
	if len(rows) < 2 {
		return // no pods: no table
	}
	want := width.StringWidth(rows[0])
	for _, row := range rows[1:] {
		if got := width.StringWidth(row); got != want {
			t.Errorf("row %q is %d cells wide, header %q is %d", row, got, rows[0], want)
		}
	}
}

func TestWriteBars(t *testing.T) {
	tests := []struct {
		count, most   int
		unicode, asci string
	}{
		{100, 100, strings.Repeat("█", 24), strings.Repeat("#", 24)},
		{50, 100, strings.Repeat("█", 12), strings.Repeat("#", 12)},
		{51, 100, strings.Repeat("█", 12) + "▎", strings.Repeat("#", 12)},
		{1, 1000, "▏", "#"},
		{0, 100, "", ""},
	}
	for _, tt := range tests {
		if got := unicodeBar(tt.count, tt.most); got != tt.unicode {
			t.Errorf("unicodeBar(%d, %d) = %q, want %q", tt.count, tt.most, got, tt.unicode)
		}
		if got := asciiBar(tt.count, tt.most); got != tt.asci {
			t.Errorf("asciiBar(%d, %d) = %q, want %q", tt.count, tt.most, got, tt.asci)
		}
	}
}

func TestReportJSON(t *testing.T) {
	data, err := json.MarshalIndent(sampleReport(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "report.json.golden"), append(data, '\n'))
	for _, field := range []string{`"elapsedNs": 1234567890`, `"p99Ns": 9876543`, `"chiSquare": {`, `"pValue": `, `"proxyNode": "worker-1"`} {
		if !bytes.Contains(data, []byte(field)) {
			t.Errorf("JSON lacks %s:\n%s", field, data)
		}
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Latency != sampleReport().Latency || back.Elapsed != sampleReport().Elapsed || len(back.Pods) != 3 {
		t.Errorf("round trip lost data: %+v", back)
	}
}

// TestCatalogue checks Write's keys: both languages have them,
// each key's arguments take the same verbs in both, and every key is used
// by Write (the golden test having rendered every variant).
func TestCatalogue(t *testing.T) {
	en, ko := catalogue[i18n.English], catalogue[i18n.Korean]
	for _, k := range writeKeys {
		if _, ok := en[k]; !ok {
			t.Errorf("%s: missing in the English catalogue", k)
		}
	}
	for key, format := range en {
		other, ok := ko[key]
		if !ok {
			t.Errorf("%s: missing in ko.json", key)
			continue
		}
		if a, b := verbs(format), verbs(other); !slices.Equal(a, b) {
			t.Errorf("%s: verbs %v in English, %v in Korean", key, a, b)
		}
	}
	for key := range ko {
		if _, ok := en[key]; !ok {
			t.Errorf("%s: missing in en.json", key)
		}
	}
	for _, r := range variants() {
		for _, l := range i18n.Langs {
			r.Write(&bytes.Buffer{}, l)
		}
	}
	for key := range en {
		if _, ok := usedKeys.Load(key); !ok {
			t.Errorf("%s: never rendered", key)
		}
	}
	usedKeys.Range(func(k, _ any) bool {
		if _, ok := en[k.(string)]; !ok && !i18n.English.Has(k.(string)) {
			t.Errorf("%s: rendered but in no catalogue", k)
		}
		return true
	})
}

var verbPattern = regexp.MustCompile(`%(?:\[(\d+)\])?[-+# 0]*\d*(?:\.\d+)?([a-zA-Z%])`)

// verbs lists the verb each argument of a format takes, by argument.
func verbs(format string) []string {
	var out []string
	next := 0
	for _, m := range verbPattern.FindAllStringSubmatch(format, -1) {
		if m[2] == "%" {
			continue
		}
		if m[1] != "" {
			fmt.Sscan(m[1], &next)
			next--
		}
		for len(out) <= next {
			out = append(out, "")
		}
		out[next] = m[2]
		next++
	}
	return out
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
