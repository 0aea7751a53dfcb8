package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxAge bounds an age: ten years, far past any retention anyone means, and
// far from time.Duration's overflow.
const MaxAge = 10 * 365 * 24 * time.Hour

// ParseAge reads an age such as "30d", "2w", "12h" or "90m": a positive
// whole number and one unit of s, m, h, d (24 hours) or w (7 days). Go
// durations ("1h30m") are accepted too. Retention and `parley purge
// --older-than` take it.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty age: want a number and a unit, such as 30d")
	}
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
	var d time.Duration
	if unit != 0 {
		n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
		if err != nil || n <= 0 || n > int64(MaxAge/unit) {
			return 0, fmt.Errorf("invalid age %q: want a positive whole number of days or weeks up to %d days, such as 30d", s, int64(MaxAge/(24*time.Hour)))
		}
		d = time.Duration(n) * unit
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("invalid age %q: want a number and a unit (s, m, h, d, w), such as 30d", s)
		}
	}
	if d <= 0 || d > MaxAge {
		return 0, fmt.Errorf("invalid age %q: want more than 0 and at most %d days", s, int64(MaxAge/(24*time.Hour)))
	}
	return d, nil
}
