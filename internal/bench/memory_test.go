package bench

import (
	"testing"

	"capsuled/internal/memory"
)

func TestBenchMemoryVariantFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg     string
		wantErr bool
		check   func(memory.Config) bool
	}{
		{"dated:date-weight=1", false, func(c memory.Config) bool { return c.DateWeight == 1 }},
		{"core: fusion=core , dense-weight=0.7", false, func(c memory.Config) bool { return c.Fusion == memory.FusionCore && c.DenseWeight == 0.7 }},
		{"many:candidates=120,speaker-weight=-1,recency-weight=0.1", false, func(c memory.Config) bool {
			return c.Candidates == 120 && c.SpeakerWeight == -1 && c.RecencyWeight == 0.1
		}},
		{"empty:", false, func(c memory.Config) bool { return c.DateWeight == 0 && c.Fusion == "" && c.Candidates == 0 }},
		{"no settings", true, nil},
		{":date-weight=1", true, nil},
		{"bad:date-weight=x", true, nil},
		{"unknown:colour=red", true, nil},
		{"novalue:date-weight", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			t.Parallel()
			var v variantFlag
			err := v.Set(tt.arg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Set(%q): %v, want error %v", tt.arg, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			var c memory.Config
			if err := applyVariant(&c, v[0].settings); err != nil || !tt.check(c) {
				t.Fatalf("applied %q: %+v, %v", v[0].settings, c, err)
			}
		})
	}
}
