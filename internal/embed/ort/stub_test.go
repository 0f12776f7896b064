//go:build !cgo

package ort

import (
	"context"
	"errors"
	"testing"
)

func TestStubNeedsCgo(t *testing.T) {
	t.Parallel()
	if _, err := New(context.Background(), Config{ModelDir: t.TempDir()}); !errors.Is(err, ErrNeedsCgo) {
		t.Fatalf("New = %v, want ErrNeedsCgo", err)
	}
}
