// Package hub is Parley's domain: workspaces, agents and their presence, messages
// and their per-recipient delivery, addressing, groups, and long-poll waits.
//
// It owns the rules (validation, addressing, inbox order, wake-ups) and talks to
// durable state only through the Store interface. It imports nothing of Parley's;
// the daemon, the MCP tools and the stores import it.
package hub
