package door

// Certified are the client versions each door is known to work with: the
// versions test/npm pins, which the e2e door tests run for real
// (TestDoorClaude, TestDoorCodex, TestDoorQwen, TestDoorOpencode).
// scripts/newest-clients runs the same tests against the newest releases;
// a version they pass with goes here with its pin.
var Certified = map[string]CertifiedClient{
	"claude":   {Package: "@anthropic-ai/claude-code", Version: "2.1.332", Command: "claude"},
	"codex":    {Package: "@openai/codex", Version: "0.171.0", Command: "codex"},
	"qwen":     {Package: "@qwen-code/qwen-code", Version: "0.24.4", Command: "qwen"},
	"opencode": {Package: "opencode-ai", Version: "1.18.33", Command: "opencode"},
}

// CertifiedClient is a client whose door Parley tested.
type CertifiedClient struct {
	Package string // its npm package
	Version string // the version its door test passed with
	Command string // the command it installs
}
