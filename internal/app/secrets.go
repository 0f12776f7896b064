package app

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// The names of the server's secrets, as in the store's secrets table.
const (
	secretTokenSigning = "access-token-signing-key"
	secretSession      = "dashboard-session-key"
)

// minSecretBytes is the shortest key accepted for HMAC-SHA256.
const minSecretBytes = 32

// Secrets are signing keys the operator supplies (--secrets-file or
// CAPSULED_SECRETS) instead of the keys capsuled generates and keeps in its
// database. For each name the first key signs and every key verifies, so a
// key is rotated by putting the new one first and removing the old one once
// what it signed has expired (tokens: 24 h at most; sessions: 12 h).
type Secrets struct {
	TokenSigning [][]byte
	Session      [][]byte
}

// ParseSecrets reads the secrets format: one "<name> <base64 key>" per line
// (or separated by ";"), # comments and blank lines ignored. The names are
// access-token-signing-key and dashboard-session-key; keys are standard
// base64 of at least 32 bytes (openssl rand -base64 32).
func ParseSecrets(text string) (Secrets, error) {
	var s Secrets
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ';' })
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		value = strings.TrimSpace(value)
		if !ok || value == "" {
			return Secrets{}, fmt.Errorf("secrets entry %d: want \"<name> <base64 key>\"", i+1)
		}
		key, err := base64.StdEncoding.Strict().DecodeString(value)
		if err != nil {
			return Secrets{}, fmt.Errorf("secrets entry %d (%s): the key is not standard base64", i+1, name)
		}
		if len(key) < minSecretBytes {
			return Secrets{}, fmt.Errorf("secrets entry %d (%s): the key is %d bytes, want at least %d", i+1, name, len(key), minSecretBytes)
		}
		switch name {
		case secretTokenSigning:
			s.TokenSigning = append(s.TokenSigning, key)
		case secretSession:
			s.Session = append(s.Session, key)
		default:
			return Secrets{}, fmt.Errorf("secrets entry %d: unknown name %q (want %s or %s)", i+1, name, secretTokenSigning, secretSession)
		}
	}
	return s, nil
}

// loadSecrets reads the operator's secrets from the file and the text (the
// CAPSULED_SECRETS variable), whichever are set, and warns when the file is
// readable by the group or others.
func loadSecrets(file, text string, log *slog.Logger) (Secrets, error) {
	var all Secrets
	if file != "" {
		st, err := os.Stat(file)
		if err != nil {
			return Secrets{}, fmt.Errorf("secrets file: %w", err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			log.Warn("the secrets file is readable by others: chmod 600 it", "path", file, "mode", fmt.Sprintf("%04o", st.Mode().Perm()))
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return Secrets{}, fmt.Errorf("secrets file: %w", err)
		}
		if all, err = ParseSecrets(string(b)); err != nil {
			return Secrets{}, fmt.Errorf("secrets file %s: %w", file, err)
		}
	}
	if text != "" {
		s, err := ParseSecrets(text)
		if err != nil {
			return Secrets{}, fmt.Errorf("CAPSULED_SECRETS: %w", err)
		}
		all.TokenSigning = append(all.TokenSigning, s.TokenSigning...)
		all.Session = append(all.Session, s.Session...)
	}
	return all, nil
}
