package textwrap

import (
	"reflect"
	"testing"
)

func TestWrapKeepsWordsWhole(t *testing.T) {
	got := Wrap("the quick brown fox jumps over the lazy dog", 10)
	want := []string{"the quick", "brown fox", "jumps over", "the lazy", "dog"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Wrap = %q, want %q", got, want)
	}
}

func TestWrapCutsLongWords(t *testing.T) {
	got := Wrap("a supercalifragilistic word", 8)
	want := []string{"a", "supercal", "ifragili", "stic", "word"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Wrap = %q, want %q", got, want)
	}
}

func TestIndentLeavesBlankLines(t *testing.T) {
	got := Indent("one\n\ntwo", "> ")
	if got != "> one\n\n> two" {
		t.Fatalf("Indent = %q", got)
	}
}

func TestParagraphs(t *testing.T) {
	got := Paragraphs("a b c\n\n\nd e", 3)
	if got != "a b\nc\n\nd e" {
		t.Fatalf("Paragraphs = %q", got)
	}
}
