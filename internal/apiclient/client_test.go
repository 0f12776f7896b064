package apiclient

import "testing"

func TestError(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"error body with param", `{"error":{"message":"must not be empty","type":"invalid_request_error","param":"query","code":null}}`,
			"400 invalid_request_error: query: must not be empty"},
		{"error body without param", `{"error":{"message":"no such capsule","type":"not_found_error"}}`,
			"400 not_found_error: no such capsule"},
		{"not JSON", `<html>bad gateway</html>`, "unexpected response 400: <html>bad gateway</html>"},
		{"JSON, not an error body", `{"ok":true}`, `unexpected response 400: {"ok":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Error(400, []byte(tt.body)).Error(); got != tt.want {
				t.Errorf("Error(400, %s) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}
