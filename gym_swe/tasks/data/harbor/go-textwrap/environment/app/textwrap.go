// Package textwrap fills plain text into lines of a fixed width, for terminal help output and commit
// message bodies.
package textwrap

import "strings"

// Wrap splits text into lines of at most width characters. Words are kept whole where they fit and
// separated by single spaces; runs of whitespace, newlines included, count as one separator. A word
// longer than width is cut into pieces of width characters. Width counts characters (Unicode code
// points), not bytes, so "naïve" is five wide. Wrap panics when width is less than 1.
func Wrap(text string, width int) []string {
	if width < 1 {
		panic("textwrap: width must be at least 1")
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		for len(word) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			lines = append(lines, word[:width])
			word = word[width:]
		}
		switch {
		case word == "":
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Fill is Wrap joined with newlines, with no newline at the end.
func Fill(text string, width int) string {
	return strings.Join(Wrap(text, width), "\n")
}

// Indent prefixes every line of text with prefix, except blank lines, which stay empty.
func Indent(text, prefix string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) != "" {
			lines[i] = prefix + line
		}
	}
	return strings.Join(lines, "\n")
}

// Paragraphs fills each paragraph of text (paragraphs are separated by blank lines) to width and
// joins them with one blank line.
func Paragraphs(text string, width int) string {
	var filled []string
	for _, paragraph := range strings.Split(text, "\n\n") {
		if strings.TrimSpace(paragraph) != "" {
			filled = append(filled, Fill(paragraph, width))
		}
	}
	return strings.Join(filled, "\n\n")
}
