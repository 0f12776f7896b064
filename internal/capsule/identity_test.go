package capsule

import "testing"

func TestNormalizeURI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"  file:///home/ana/docs/./handbook.md ": "file:///home/ana/docs/handbook.md",
		"FILE://localhost/home//ana/../ana/x.md": "file:///home/ana/x.md",
		"file:handbook.md":                       "file:handbook.md",
		"file:./handbook.md":                     "file:./handbook.md",
		"HTTPS://Example.COM/a/./b/?q=1#Top":     "https://example.com/a/b/?q=1#Top",
		"http://example.com":                     "http://example.com",
		"doc://Fox/A":                            "doc://fox/A",
		"urn:ISBN:0451450523":                    "urn:ISBN:0451450523",
		"sha256:abc":                             "sha256:abc",
		"notes about tides":                      "notes about tides",
		"my file:v2":                             "my file:v2",
		"file:///my docs/a%20b.md":               "file:///my docs/a%20b.md",
		"":                                       "",
		":x":                                     ":x",
		"HTTP:/. /.":                             "http:/",
	} {
		if got := normalizeURI(in); got != want {
			t.Errorf("normalizeURI(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzNormalizeURI(f *testing.F) {
	for _, s := range []string{"file:///a/./b", "HTTP://X/../y?#", "file:name", "a:b:c", "//x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := normalizeURI(s)
		if again := normalizeURI(n); again != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, again)
		}
	})
}
