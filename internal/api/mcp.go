package api

// Wire names of what Parley adds to MCP, for the daemon's /mcp (mcpserver)
// and the bridge (`parley mcp serve`): how a client that confirms by itself
// says which messages it has, and the stream session, one MCP session on one
// upgraded connection.
const (
	// MetaDelivered is the key of a tool result's _meta under which the
	// daemon lists the ids of the messages the result hands to the session.
	// They stay leased to the session until confirmed: a bridge confirms
	// them once it has written the result to its client.
	MetaDelivered = "parley/delivered"
	// MethodDelivered is the notification with which a bridge confirms, on
	// its stream session, the messages it wrote to its client (params:
	// messageIds).
	MethodDelivered = "notifications/parley/delivered"
	// StreamProtocol is the Upgrade token of a stream session: GET /mcp
	// with it turns the connection into newline-delimited JSON-RPC both
	// ways.
	StreamProtocol = "parley-mcp"
	// MethodMessage is the notification with which a daemon pushes one of
	// the agent's messages on a stream that asked for them (Hello.Push). Its params are
	// {"message": MessageInfo, "_meta": {MetaDelivered: [its id]}}; the
	// message is leased to the session until the bridge confirms it.
	MethodMessage = "notifications/parley/message"
	// MetaErrorKind is the key of a tool error result's _meta that names
	// the error's kind (hub.Kind's wire name: invalid, not_found, ...), as
	// the JSON API's error body does.
	MetaErrorKind = "parley/error_kind"
)
