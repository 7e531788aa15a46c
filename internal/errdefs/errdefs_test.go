package errdefs

import (
	"errors"
	"fmt"
	"testing"
)

func TestClass(t *testing.T) {
	base := errors.New("pod \"x\" is bad")
	for _, tc := range []struct {
		name                   string
		err                    error
		invalid, notFound, dup bool
		msg                    string
	}{
		{"invalid", Invalid(base), true, false, false, base.Error()},
		{"wrapped invalid", fmt.Errorf("applying: %w", Invalid(base)), true, false, false, "applying: " + base.Error()},
		{"not found", Class(ErrNotFound, base), false, true, false, base.Error()},
		{"exists", Class(ErrAlreadyExists, base), false, false, true, base.Error()},
		{"plain", base, false, false, false, base.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsInvalid(tc.err); got != tc.invalid {
				t.Errorf("IsInvalid = %v", got)
			}
			if got := IsNotFound(tc.err); got != tc.notFound {
				t.Errorf("IsNotFound = %v", got)
			}
			if got := IsAlreadyExists(tc.err); got != tc.dup {
				t.Errorf("IsAlreadyExists = %v", got)
			}
			if tc.err.Error() != tc.msg {
				t.Errorf("message %q, want %q", tc.err.Error(), tc.msg)
			}
			if !errors.Is(tc.err, base) {
				t.Error("the cause is lost")
			}
		})
	}
	if Invalid(nil) != nil {
		t.Error("Invalid(nil) != nil")
	}
}
