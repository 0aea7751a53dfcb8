package hub

import "strings"

// AddressKind says what an address names.
type AddressKind int

// The kinds of address.
const (
	AddrName      AddressKind = iota // an agent name (maybe not registered yet)
	AddrEveryone                     // @everyone
	AddrGroupRole                    // @name: a group of that name, else a role
	AddrComposite                    // agent:ROLE:HASH
	AddrQueue                        // queue:NAME, a work queue
)

// HumanPrefix starts a person's address: someone at the dashboard sends as
// human:NAME, and agents reply to that address. A person is not an agent: it
// is never registered, so role, group and @everyone expansions leave it out.
const HumanPrefix = "human:"

// Address is a parsed recipient address.
type Address struct {
	Kind AddressKind
	// Name is the agent, group or role name; for AddrComposite, the hash.
	Name string
	// Role is the role part of a composite id.
	Role string
}

// ParseAddress parses a recipient address: a name, @role, @group, @everyone,
// a composite id agent:ROLE:HASH, a person, human:NAME, or a work queue,
// queue:NAME. It checks syntax only; Resolve looks the address up.
func ParseAddress(addr string) (Address, error) {
	addr = strings.TrimSpace(addr)
	switch {
	case addr == "":
		return Address{}, Errorf("", Invalid, "no recipient: give a name, @role, @group, @everyone, agent:role:hash or queue:name")
	case strings.HasPrefix(addr, HumanPrefix):
		if err := ValidName("person's name", addr[len(HumanPrefix):]); err != nil {
			return Address{}, err
		}
		return Address{Kind: AddrName, Name: addr}, nil
	case strings.HasPrefix(addr, QueuePrefix):
		name := addr[len(QueuePrefix):]
		if err := ValidName("queue name", name); err != nil {
			return Address{}, err
		}
		return Address{Kind: AddrQueue, Name: name}, nil
	case strings.HasPrefix(addr, "agent:"):
		parts := strings.Split(addr, ":")
		if len(parts) != 3 || parts[2] == "" {
			return Address{}, Errorf("", Invalid, "invalid composite id %q: want agent:ROLE:HASH", addr)
		}
		return Address{Kind: AddrComposite, Role: parts[1], Name: parts[2]}, nil
	case strings.HasPrefix(addr, "@"):
		name := addr[1:]
		if err := ValidName("address", name); err != nil {
			return Address{}, err
		}
		if name == Everyone {
			return Address{Kind: AddrEveryone, Name: name}, nil
		}
		return Address{Kind: AddrGroupRole, Name: name}, nil
	default:
		if err := ValidName("recipient", addr); err != nil {
			return Address{}, err
		}
		return Address{Kind: AddrName, Name: addr}, nil
	}
}

// String renders the address as ParseAddress reads it.
func (a Address) String() string {
	switch a.Kind {
	case AddrEveryone, AddrGroupRole:
		return "@" + a.Name
	case AddrComposite:
		return "agent:" + a.Role + ":" + a.Name
	case AddrQueue:
		return QueuePrefix + a.Name
	}
	return a.Name
}

// ValidSender checks the sender of a message: an agent name or a person,
// human:NAME.
func ValidSender(s string) error {
	if name, ok := strings.CutPrefix(s, HumanPrefix); ok {
		return ValidName("person's name", name)
	}
	return ValidName("sender", s)
}
