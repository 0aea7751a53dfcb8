package hub

// A Sidechat session used to be a workspace of its own, named by the tool's
// session argument, so a session bound to workspace alpha read, cleared and
// forged the messages of workspace beta by naming it. Sidechat sessions now
// live inside the caller's workspace.

// SidechatMark separates a workspace from a Sidechat session's name in the
// session's own workspace.
const SidechatMark = "#sidechat:"

// SidechatWorkspace is the workspace that holds Sidechat session session for
// callers bound to ws. It starts with ws and the mark, so whatever the
// session is called, it names a namespace inside ws and never another
// workspace.
func SidechatWorkspace(ws, session string) string { return ws + SidechatMark + session }
