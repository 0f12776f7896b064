package cli

import (
	"errors"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		trace bool
		limit int
		pos   []string
		err   bool
	}{
		{name: "flags first", args: []string{"--trace", "--limit", "3", "caps", "q"}, trace: true, limit: 3, pos: []string{"caps", "q"}},
		{name: "flags last", args: []string{"caps", "q", "--trace", "--limit", "3"}, trace: true, limit: 3, pos: []string{"caps", "q"}},
		{name: "flags between", args: []string{"caps", "-limit=4", "q", "-trace"}, trace: true, limit: 4, pos: []string{"caps", "q"}},
		{name: "bool then positional", args: []string{"--trace", "caps"}, trace: true, limit: 10, pos: []string{"caps"}},
		{name: "dash is positional", args: []string{"ns", "-", "--limit", "2"}, limit: 2, pos: []string{"ns", "-"}},
		{name: "double dash ends flags", args: []string{"caps", "--", "--trace", "-x"}, limit: 10, pos: []string{"caps", "--trace", "-x"}},
		{name: "env fills what is not given", args: []string{"caps"}, env: map[string]string{"CAPSULED_LIMIT": "7", "CAPSULED_TRACE": "true"}, trace: true, limit: 7, pos: []string{"caps"}},
		{name: "command line wins over env", args: []string{"caps", "--limit", "1"}, env: map[string]string{"CAPSULED_LIMIT": "7"}, limit: 1, pos: []string{"caps"}},
		{name: "bad env value", args: nil, env: map[string]string{"CAPSULED_LIMIT": "many"}, err: true},
		{name: "unknown flag", args: []string{"caps", "--colour", "red"}, err: true},
		{name: "missing value", args: []string{"caps", "--limit"}, err: true},
		{name: "help", args: []string{"-h"}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := NewFlags("test", io.Discard)
			trace := fs.Bool("trace", false, "")
			limit := fs.Int("limit", 10, "")
			err := Parse(fs, tt.args)
			if (err != nil) != tt.err {
				t.Fatalf("Parse(%q): %v, want error %v", tt.args, err, tt.err)
			}
			if err != nil {
				return
			}
			if *trace != tt.trace || *limit != tt.limit || !slices.Equal(fs.Args(), tt.pos) {
				t.Errorf("Parse(%q): trace %v limit %d positional %q; want %v %d %q", tt.args, *trace, *limit, fs.Args(), tt.trace, tt.limit, tt.pos)
			}
		})
	}
}

func TestParseUsageError(t *testing.T) {
	fs := NewFlags("test", io.Discard)
	if err := Parse(fs, []string{"--nope"}); !errors.Is(err, ErrUsage) {
		t.Errorf("unknown flag: %v, want ErrUsage", err)
	}
}

func TestListFlag(t *testing.T) {
	var l ListFlag
	if err := l.Set(" a, b ,,c "); err != nil || !slices.Equal(l, ListFlag{"a", "b", "c"}) || l.String() != "a,b,c" {
		t.Errorf("Set: %q %v", l, err)
	}
	if err := l.Set(""); err != nil || len(l) != 0 {
		t.Errorf("Set(\"\"): %q %v", l, err)
	}
}
