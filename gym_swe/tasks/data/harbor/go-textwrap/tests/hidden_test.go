package hidden

import (
	"reflect"
	"testing"
	"unicode/utf8"

	"example.com/textwrap"
)

func TestWrapCountsCharactersNotBytes(t *testing.T) {
	cases := []struct {
		text  string
		width int
		want  []string
	}{
		{"naïve café au lait", 10, []string{"naïve café", "au lait"}},
		{"größer über straße", 6, []string{"größer", "über", "straße"}},
		{"你好世界 你好", 4, []string{"你好世界", "你好"}},
		{"日本語 の テキスト", 5, []string{"日本語 の", "テキスト"}},
		{"ça va très bien", 7, []string{"ça va", "très", "bien"}},
	}
	for _, c := range cases {
		if got := textwrap.Wrap(c.text, c.width); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.text, c.width, got, c.want)
		}
	}
}

func TestWrapCutsLongWordsOnCharacters(t *testing.T) {
	got := textwrap.Wrap("x Ünïcödé", 3)
	want := []string{"x", "Ünï", "cöd", "é"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Wrap = %q, want %q", got, want)
	}
	for _, line := range textwrap.Wrap("ééééééééé ñññ", 2) {
		if !utf8.ValidString(line) || utf8.RuneCountInString(line) > 2 {
			t.Fatalf("line %q is not valid UTF-8 of at most 2 characters", line)
		}
	}
}

func TestWrapASCII(t *testing.T) {
	got := textwrap.Wrap("  one two\tthree\n\nfour  ", 9)
	want := []string{"one two", "three", "four"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Wrap = %q, want %q", got, want)
	}
	if got := textwrap.Wrap("", 5); len(got) != 0 {
		t.Fatalf("Wrap of empty text = %q, want no lines", got)
	}
	if got := textwrap.Wrap("abcdefgh", 4); !reflect.DeepEqual(got, []string{"abcd", "efgh"}) {
		t.Fatalf("Wrap = %q", got)
	}
}

func TestWrapPanicsOnZeroWidth(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Wrap with width 0 did not panic")
		}
	}()
	textwrap.Wrap("a", 0)
}

func TestFillAndParagraphs(t *testing.T) {
	if got := textwrap.Fill("déjà vu again", 7); got != "déjà vu\nagain" {
		t.Fatalf("Fill = %q", got)
	}
	got := textwrap.Paragraphs("élan vital\n\nœuvre complète", 6)
	if got != "élan\nvital\n\nœuvre\ncomplè\nte" {
		t.Fatalf("Paragraphs = %q", got)
	}
}
