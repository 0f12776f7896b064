package memory

import (
	"testing"
	"time"
	"unicode/utf8"
)

func TestFindDateCue(t *testing.T) {
	t.Parallel()
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		text     string
		ok       bool
		from, to time.Time
		rest     string
	}{
		{"What movie did Joanna watch on 1 May, 2022?", true, day(2022, 5, 1), day(2022, 5, 2), "What movie did Joanna watch ?"},
		{"What painting did Melanie show to Caroline on October 13, 2023?", true, day(2023, 10, 13), day(2023, 10, 14), "What painting did Melanie show to Caroline ?"},
		{"what happened on the 3rd of june 2023", true, day(2023, 6, 3), day(2023, 6, 4), "what happened"},
		{"notes from 2024-02-29 please", true, day(2024, 2, 29), day(2024, 3, 1), "notes from please"},
		{"What setback did Melanie face in October 2023?", true, day(2023, 10, 1), day(2023, 11, 1), "What setback did Melanie face ?"},
		{"Where did Joanna travel to in Jul. 2022", true, day(2022, 7, 1), day(2022, 8, 1), "Where did Joanna travel to"},
		{"on 31 June, 2023 we met", true, day(2023, 6, 1), day(2023, 7, 1), "on 31 we met"}, // not a day; the month stands
		{"2023-02-30", false, time.Time{}, time.Time{}, ""},
		{"How many times has Melanie gone to the beach in 2023?", false, time.Time{}, time.Time{}, ""},
		{"May I ask what you did in 12 months?", false, time.Time{}, time.Time{}, ""},
		{"", false, time.Time{}, time.Time{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			c, ok := findDateCue(tt.text)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v (%+v)", ok, tt.ok, c)
			}
			if !ok {
				return
			}
			if !c.From.Equal(tt.from) || !c.To.Equal(tt.to) || c.Rest != tt.rest {
				t.Fatalf("got [%s, %s) %q, want [%s, %s) %q", c.From, c.To, c.Rest, tt.from, tt.to, tt.rest)
			}
		})
	}
}

func FuzzFindDateCue(f *testing.F) {
	for _, s := range []string{"on 1 May, 2022", "October 13, 2023", "2024-02-29", "in Sept 2023", "31 June 2023", "7th of jul 1999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, ok := findDateCue(text)
		if !ok {
			return
		}
		if !c.From.Before(c.To) || c.To.Sub(c.From) > 31*24*time.Hour {
			t.Fatalf("span [%s, %s) of %q", c.From, c.To, text)
		}
		if len(c.Rest) >= len(text) {
			t.Fatalf("rest %q is not shorter than %q", c.Rest, text)
		}
		if utf8.ValidString(text) && !utf8.ValidString(c.Rest) {
			t.Fatalf("rest %q of valid %q is not valid UTF-8", c.Rest, text)
		}
	})
}
