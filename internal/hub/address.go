package hub

import "strings"

// AddressKind says what an address names.
type AddressKind int

// The kinds of address.
const (
	AddrName      AddressKind = iota // an agent name (maybe not registered yet)
	AddrEveryone                     // @everyone
	AddrGroupRole                    // @name: a group of that name, or a role; never both
	AddrComposite                    // agent:ROLE:HASH
	AddrQueue                        // queue:NAME, a work queue
	AddrGroup                        // @group:name, a group only
	AddrRole                         // @role:name, a role only
)

// The prefixes of an address that says which it means: @group:NAME is
// the group, @role:NAME the agents of the role, whatever else has the name.
const (
	GroupPrefix = "@group:"
	RolePrefix  = "@role:"
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
// @group:NAME or @role:NAME (which say which they mean), a composite id
// agent:ROLE:HASH, a person, human:NAME, or a work queue, queue:NAME. It
// checks syntax only; Resolve looks the address up.
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
	case strings.HasPrefix(addr, GroupPrefix):
		name := addr[len(GroupPrefix):]
		if err := ValidName("group name", name); err != nil {
			return Address{}, err
		}
		return Address{Kind: AddrGroup, Name: name}, nil
	case strings.HasPrefix(addr, RolePrefix):
		name := addr[len(RolePrefix):]
		if err := ValidName("role", name); err != nil {
			return Address{}, err
		}
		return Address{Kind: AddrRole, Name: name}, nil
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
	case AddrGroup:
		return GroupPrefix + a.Name
	case AddrRole:
		return RolePrefix + a.Name
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
