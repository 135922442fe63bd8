package lesson

import "strings"

// unwrapListItems joins the lines of a list item that its source wraps
// onto one line. glamour keeps a soft line break inside a tight list item
// as a line break (a paragraph's it turns into a space), so an item
// wrapped in the lesson's YAML would leave a word or two alone on a line
// once wrapped again to the pane. Only indented continuation lines of an
// item are joined, outside fenced code, and not after a hard break (two
// trailing spaces or a backslash); a blank line or a new item ends an
// item.
func unwrapListItems(md string) string {
	var out []string
	inItem, fenced := false, false
	for _, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fenced, inItem = !fenced, false
		case fenced:
		case trimmed == "":
			inItem = false
		case isListItem(trimmed):
			inItem = true
		case inItem && len(out) > 0 && l != strings.TrimLeft(l, " \t") && !hardBreak(out[len(out)-1]):
			out[len(out)-1] = strings.TrimRight(out[len(out)-1], " ") + " " + trimmed
			continue
		default:
			inItem = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// isListItem reports whether a line, without its indent, starts a list
// item: a bullet (-, *, +) or a number with . or ), then a space.
func isListItem(s string) bool {
	if len(s) >= 2 && strings.ContainsRune("-*+", rune(s[0])) && s[1] == ' ' {
		return true
	}
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	return digits > 0 && len(s) > digits+1 && (s[digits] == '.' || s[digits] == ')') && s[digits+1] == ' '
}

// hardBreak reports whether a line ends in a Markdown hard line break.
func hardBreak(l string) bool {
	return strings.HasSuffix(l, "  ") || strings.HasSuffix(l, "\\")
}

// unwrapParagraphs joins the lines of each paragraph, and a list item's
// lazy continuation lines, into one line, as Markdown reads a soft line
// break: a space. The pane renders without glamour's wrapping (which
// wraps each styled run on its own) and wraps the lines itself, so a
// break written in the lesson's YAML must not survive as a line of its
// own. Code (fenced, or indented after a blank line), headings, quotes,
// tables, rules and hard breaks are left as they are.
func unwrapParagraphs(md string) string {
	var out []string
	inPara, inCode, fenced := false, false, false
	for _, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(l)
		indented := strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t")
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fenced, inPara, inCode = !fenced, false, false
		case fenced:
		case trimmed == "":
			// A blank line ends a paragraph, not indented code.
			inPara = false
		case inCode && indented:
		case inPara && joinable(trimmed) && !hardBreak(out[len(out)-1]):
			out[len(out)-1] = strings.TrimRight(out[len(out)-1], " ") + " " + trimmed
			continue
		case indented && (len(out) == 0 || strings.TrimSpace(out[len(out)-1]) == ""):
			inCode, inPara = true, false
		default:
			inCode, inPara = false, joinable(trimmed) || isListItem(trimmed)
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// joinable reports whether a line, without its indent, can continue a
// paragraph: not a heading, quote, table row, rule, list item or HTML.
func joinable(s string) bool {
	if isListItem(s) || strings.HasPrefix(s, "|") || strings.HasPrefix(s, "<") {
		return false
	}
	if strings.HasPrefix(s, "#") || strings.HasPrefix(s, ">") {
		return false
	}
	if t := strings.ReplaceAll(s, " ", ""); len(t) >= 3 && (strings.Trim(t, "-") == "" || strings.Trim(t, "=") == "" || strings.Trim(t, "*") == "" || strings.Trim(t, "_") == "") {
		return false
	}
	return true
}
