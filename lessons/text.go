package lessons

import "github.com/klab-dev/klab/assets/i18n"

// Bilingual is a text a student reads, written in Korean and in English. The
// loader accepts a lesson only when both are there and neither is empty.
type Bilingual struct {
	Korean  string
	English string
}

// Text returns the text in language l; a language klab does not speak
// gets English, as the i18n catalogue does.
func (b Bilingual) Text(l i18n.Lang) string {
	if l == i18n.Korean {
		return b.Korean
	}
	return b.English
}

// String returns the text in the current language, with the passages
// of each runtime named (ForRuntime without a runtime).
func (b Bilingual) String() string { return b.ForRuntime(i18n.Current(), "") }
