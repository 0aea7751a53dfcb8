package hub

import (
	"errors"
	"fmt"
)

// Kind classifies an error so that it survives the wire: the daemon maps it to an
// HTTP status and an MCP tool error, the client maps it back.
type Kind int

// The kinds of error the hub reports.
const (
	Internal    Kind = iota // a bug or an unexpected storage failure
	Invalid                 // the caller's input is wrong
	NotFound                // the named thing does not exist
	Conflict                // the thing exists already, or the state forbids it
	Unavailable             // a dependency (storage, daemon) cannot serve now
	TooLarge                // the input exceeds a limit
	Forbidden               // the caller may not do this
	Timeout                 // the operation ran out of time
)

var kindNames = [...]string{
	Internal:    "internal",
	Invalid:     "invalid",
	NotFound:    "not_found",
	Conflict:    "conflict",
	Unavailable: "unavailable",
	TooLarge:    "too_large",
	Forbidden:   "forbidden",
	Timeout:     "timeout",
}

// String returns the kind's wire name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "internal"
}

// ParseKind returns the kind named s; unknown names are Internal.
func ParseKind(s string) Kind {
	for k, n := range kindNames {
		if n == s {
			return Kind(k)
		}
	}
	return Internal
}

// Error is the hub's error: an operation, a kind and the underlying cause.
type Error struct {
	Op   string // the operation that failed, e.g. "send"
	Kind Kind
	Err  error
}

func (e *Error) Error() string {
	if e.Op == "" {
		return e.Err.Error()
	}
	return e.Op + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind with a formatted message.
func Errorf(op string, kind Kind, format string, args ...any) error {
	return &Error{Op: op, Kind: kind, Err: fmt.Errorf(format, args...)}
}

// KindOf reports the kind of err: the kind of the outermost *Error in its chain,
// or Internal when there is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// IsNotFound reports whether err is of kind NotFound.
func IsNotFound(err error) bool { return err != nil && KindOf(err) == NotFound }
