// Writes Wrap's and Paragraphs' results on inputs whose answers appear nowhere in the task, as a JSON
// object, to the path given: gym_swe compares them with the reference solution's (sealed checks).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"example.com/textwrap"
)

func main() {
	inputs := []struct {
		text  string
		width int
	}{
		{"Ærøskøbing ligger på Ærø i Danmark", 9},
		{"Müller-Lüdenscheidt größte Ängste überwinden", 11},
		{"Ελληνικά κείμενα με τόνους και πνεύματα", 8},
		{"東京都 特許 許可局 局長 今日 急遽 休暇 許可 拒否", 5},
		{"crème brûlée, pâté, façade, naïveté, résumé", 12},
		{"Ωμέγα", 2},
		{"привет мир как дела сегодня", 6},
		{"ñandú pingüino ágil", 5},
		{"plain ascii words still wrap the same way", 7},
		{"señor ñoño año", 4},
		{"žluťoučký kůň úpěl ďábelské ódy", 10},
		{"€€€€€ €€ € €€€", 3},
	}
	checks := map[string]string{}
	for i, input := range inputs {
		checks[fmt.Sprintf("wrap_%02d", i)] = strings.Join(textwrap.Wrap(input.text, input.width), "|")
	}
	checks["paragraphs"] = textwrap.Paragraphs("Él está aquí.\n\nÀ bientôt, chère amie.\n\nĐà Nẵng", 7)
	out, err := json.Marshal(checks)
	if err == nil {
		err = os.WriteFile(os.Args[1], out, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
