package memory

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A dateCue is a calendar day or month a query names, such as "on 7 July,
// 2023" or "in May 2023": the span [From, To) it covers, and the query
// without it.
type dateCue struct {
	From, To time.Time
	Rest     string
}

var (
	monthNames = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?`
	// dayMonthYear: "7 July, 2023", "7th of July 2023".
	dayMonthYear = regexp.MustCompile(`(?i)\b(?:on\s+)?(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthNames + `,?\s+(\d{4})\b`)
	// monthDayYear: "July 7, 2023", "July 7th 2023".
	monthDayYear = regexp.MustCompile(`(?i)\b(?:on\s+)?` + monthNames + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b`)
	// isoDate: "2023-07-07".
	isoDate = regexp.MustCompile(`\b(?:on\s+)?(\d{4})-(\d{2})-(\d{2})\b`)
	// monthYear: "July 2023", "in July, 2023".
	monthYear = regexp.MustCompile(`(?i)\b(?:in\s+|during\s+)?` + monthNames + `,?\s+(\d{4})\b`)
)

// month maps a month name or abbreviation to its number (0: unknown).
func month(name string) time.Month {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for m := time.January; m <= time.December; m++ {
		full := strings.ToLower(m.String())
		if name == full || (len(name) >= 3 && strings.HasPrefix(full, name)) {
			return m
		}
	}
	return 0
}

// findDateCue returns the first day or month text names (days first, then
// months), or false. Years outside 1900–2999 and impossible days are not
// dates.
func findDateCue(text string) (dateCue, bool) {
	day := func(y, m, d int) (time.Time, bool) {
		if y < 1900 || y > 2999 || m < 1 || m > 12 || d < 1 {
			return time.Time{}, false
		}
		t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
		return t, t.Day() == d // 31 June is not a date
	}
	cut := func(loc []int) string {
		return strings.Join(strings.Fields(text[:loc[0]]+" "+text[loc[1]:]), " ")
	}
	if loc := dayMonthYear.FindStringSubmatchIndex(text); loc != nil {
		d, _ := strconv.Atoi(text[loc[2]:loc[3]])
		y, _ := strconv.Atoi(text[loc[6]:loc[7]])
		if t, ok := day(y, int(month(text[loc[4]:loc[5]])), d); ok {
			return dateCue{From: t, To: t.AddDate(0, 0, 1), Rest: cut(loc)}, true
		}
	}
	if loc := monthDayYear.FindStringSubmatchIndex(text); loc != nil {
		d, _ := strconv.Atoi(text[loc[4]:loc[5]])
		y, _ := strconv.Atoi(text[loc[6]:loc[7]])
		if t, ok := day(y, int(month(text[loc[2]:loc[3]])), d); ok {
			return dateCue{From: t, To: t.AddDate(0, 0, 1), Rest: cut(loc)}, true
		}
	}
	if loc := isoDate.FindStringSubmatchIndex(text); loc != nil {
		y, _ := strconv.Atoi(text[loc[2]:loc[3]])
		m, _ := strconv.Atoi(text[loc[4]:loc[5]])
		d, _ := strconv.Atoi(text[loc[6]:loc[7]])
		if t, ok := day(y, m, d); ok {
			return dateCue{From: t, To: t.AddDate(0, 0, 1), Rest: cut(loc)}, true
		}
	}
	if loc := monthYear.FindStringSubmatchIndex(text); loc != nil {
		y, _ := strconv.Atoi(text[loc[4]:loc[5]])
		if t, ok := day(y, int(month(text[loc[2]:loc[3]])), 1); ok {
			return dateCue{From: t, To: t.AddDate(0, 1, 0), Rest: cut(loc)}, true
		}
	}
	return dateCue{}, false
}
