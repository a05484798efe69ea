#!/bin/bash
# The reference fix: Wrap measures words and lines in characters (runes), and cuts long words between
# characters, never inside one.
set -euo pipefail
patch -p1 --forward <<'PATCH'
--- a/textwrap.go
+++ b/textwrap.go
@@ -2,7 +2,10 @@
 // message bodies.
 package textwrap
 
-import "strings"
+import (
+	"strings"
+	"unicode/utf8"
+)
 
 // Wrap splits text into lines of at most width characters. Words are kept whole where they fit and
 // separated by single spaces; runs of whitespace, newlines included, count as one separator. A word
@@ -15,19 +18,20 @@
 	var lines []string
 	line := ""
 	for _, word := range strings.Fields(text) {
-		for len(word) > width {
+		for utf8.RuneCountInString(word) > width {
 			if line != "" {
 				lines = append(lines, line)
 				line = ""
 			}
-			lines = append(lines, word[:width])
-			word = word[width:]
+			cut := byteOffset(word, width)
+			lines = append(lines, word[:cut])
+			word = word[cut:]
 		}
 		switch {
 		case word == "":
 		case line == "":
 			line = word
-		case len(line)+1+len(word) <= width:
+		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
 			line += " " + word
 		default:
 			lines = append(lines, line)
@@ -40,6 +44,18 @@
 	return lines
 }
 
+// byteOffset is where the character at index n of s starts, in bytes (len(s) past the end): a cut there
+// never splits a multi-byte character.
+func byteOffset(s string, n int) int {
+	for offset := range s {
+		if n == 0 {
+			return offset
+		}
+		n--
+	}
+	return len(s)
+}
+
 // Fill is Wrap joined with newlines, with no newline at the end.
 func Fill(text string, width int) string {
 	return strings.Join(Wrap(text, width), "\n")
PATCH
