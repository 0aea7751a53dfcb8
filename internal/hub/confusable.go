package hub

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
)

// Two agents whose names look alike on screen (bob, and bоb with a Cyrillic
// о) invite messages to the wrong one; an impostor would choose such a name
// on purpose. Join refuses a name whose skeleton equals an existing agent's.
//
// The skeleton is Unicode's (TS #39, confusables.txt, through
// github.com/mtibben/confusables), with what names also should not tell
// apart: compatibility decomposition first (NFKD folds fullwidth,
// mathematical and ligature forms), combining marks dropped (é is e), and
// case (Bob is bob), taken to a fixed point.

// Skeleton returns the form of name that two confusable names share.
func Skeleton(name string) string {
	// Invalid UTF-8 is made valid first, so the skeleton is a fixed point of
	// itself (the normaliser and the range loop treat stray bytes differently).
	s := strings.ToValidUTF8(name, "\uFFFD")
	// Mapped before lower case (I is l, not i), and after (Ω lowers to ω),
	// until nothing changes.
	for range 4 {
		next := strings.ToLower(unmarked(confusables.Skeleton(unmarked(s))))
		if next == s {
			break
		}
		s = next
	}
	return s
}

// unmarked is s in compatibility decomposition, without combining marks.
func unmarked(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range norm.NFKD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// confusableWith returns the first of names, other than name itself, that
// looks like name, or "".
func confusableWith(name string, names []string) string {
	sk := Skeleton(name)
	for _, n := range names {
		if n != name && Skeleton(n) == sk {
			return n
		}
	}
	return ""
}

// describeRunes names the characters of the names outside ASCII, so that an
// error says why two names that look the same differ.
func describeRunes(names ...string) string {
	var parts []string
	for _, r := range strings.Join(names, "") {
		if r < 0x80 {
			continue
		}
		script := "other script"
		for _, t := range []struct {
			name string
			tab  *unicode.RangeTable
		}{{"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek}, {"Latin", unicode.Latin}} {
			if unicode.Is(t.tab, r) {
				script = t.name
				break
			}
		}
		parts = append(parts, fmt.Sprintf("%c is %U, %s", r, r, script))
	}
	if len(parts) == 0 {
		return "they differ only in case or in 0/o, 1/l, I/l"
	}
	return strings.Join(parts, "; ")
}

// checkNewName refuses a new agent name that is built to look like another:
// one that mixes Latin letters with Cyrillic or Greek ones (bоb, with a
// Cyrillic о), or that is written in compatibility forms (ｂｏｂ, fullwidth).
// Such a name could squat a plain one before its agent joins. The name of
// Parley's own notices is reserved.
func checkNewName(name string) error {
	if name == NoticeSender {
		return Errorf("", Invalid, "agent name %q is reserved for Parley's own notices", name)
	}
	if c := norm.NFKC.String(name); c != name {
		return Errorf("", Invalid, "agent name %q is written in compatibility forms (%s): write it as %q", name, describeRunes(name), c)
	}
	scripts := map[string]bool{}
	for _, r := range name {
		for _, t := range []struct {
			name string
			tab  *unicode.RangeTable
		}{{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek}} {
			if unicode.Is(t.tab, r) {
				scripts[t.name] = true
			}
		}
	}
	if scripts["Latin"] && (scripts["Cyrillic"] || scripts["Greek"]) {
		return Errorf("", Invalid, "agent name %q mixes Latin letters with Cyrillic or Greek ones (%s), which look alike: write it in one script", name, describeRunes(name))
	}
	if latin := wholeScriptLatin(name); latin != "" {
		return Errorf("", Invalid, "agent name %q is written in letters that all look like Latin ones (%s): it reads as %q, and would squat that name; write it in Latin letters, or with a letter that looks like none", name, describeRunes(name), latin)
	}
	return nil
}

// wholeScriptLatin returns the plain Latin name that name, written wholly
// in another script, cannot be told from (аре, all Cyrillic, is ape), or
// "" if it is written in Latin letters or has a letter that looks like no
// Latin one (борис: и and б's skeletons are not ASCII letters).
func wholeScriptLatin(name string) string {
	letters := false
	for _, r := range name {
		if unicode.IsLetter(r) {
			if unicode.Is(unicode.Latin, r) {
				return ""
			}
			letters = true
		}
	}
	if !letters {
		return ""
	}
	sk := Skeleton(name)
	for _, r := range sk {
		if r >= 0x80 {
			return ""
		}
	}
	return sk
}

// recipientCache remembers the plain names that a send reached without a
// look-alike problem (checkRecipient), with their agent records, for
// recipientTTL, so that a send reads no agent record in the common case:
// neither to check the name nor for its presence. A join or a rename here
// clears it; one through another daemon sharing the store shows within the
// TTL.
type recipientCache struct {
	mu  sync.Mutex
	m   map[inboxKey]recipient
	gen uint64 // counts forgets: a read begun before one is not kept
}

// recipient is what a send learned of a plain name: when, and its agent
// record (nil: the name has not joined).
type recipient struct {
	at    time.Time
	agent *Agent
}

const recipientTTL = 10 * time.Second

// get returns what is known of k, and the generation to set it with.
func (c *recipientCache) get(k inboxKey, now time.Time) (recipient, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	return r, c.gen, ok && now.Sub(r.at) < recipientTTL
}

// set records what a read begun at generation gen found, unless a forget
// came since.
func (c *recipientCache) set(k inboxKey, now time.Time, a *Agent, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.m == nil || len(c.m) >= maxRoles {
		c.m = make(map[inboxKey]recipient)
	}
	c.m[k] = recipient{now, a}
}

func (c *recipientCache) forget() {
	c.mu.Lock()
	c.m = nil
	c.gen++
	c.mu.Unlock()
}

// checkRecipient refuses a send to a name that has not joined but looks like
// an agent that has (bоb, when bob is there): the message would wait for
// an agent that never comes, or for an impostor. The error names the
// existing agent.
func (h *Hub) checkRecipient(ctx context.Context, ws, name string) error {
	k, now := inboxKey{ws, name}, h.now()
	_, gen, ok := h.recipients.get(k, now)
	if ok {
		return nil
	}
	switch a, err := h.store.Agent(ctx, ws, name); {
	case err == nil:
		h.recipients.set(k, now, a, gen)
		return nil
	case !IsNotFound(err):
		return err
	}
	other, err := h.lookalike(ctx, ws, name)
	if err != nil {
		return err
	}
	if other != "" {
		return Errorf("", NotFound, "no agent %q here, but %q is (%s): did you mean %s? A message to a name that has not joined waits for it; this one looks like an impostor's",
			name, other, describeRunes(name, other), other)
	}
	h.recipients.set(k, now, nil, gen)
	return nil
}

// lookalike returns the agent of ws, other than name itself, whose name
// looks like name, or "".
func (h *Hub) lookalike(ctx context.Context, ws, name string) (string, error) {
	as, err := h.store.Agents(ctx, ws)
	if err != nil {
		return "", err
	}
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = a.Name
	}
	return confusableWith(name, names), nil
}
