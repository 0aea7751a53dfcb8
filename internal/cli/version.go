package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version and Commit name the build. A release sets them with the linker
// (scripts/release: -X .../internal/cli.Version=v1.2.3 -X .../internal/cli.Commit=SHA);
// otherwise they come from what the go command stamps into every binary:
// the module's version for `go install ...@v1.2.3`, and the git commit of a
// build from a checkout.
var (
	Version = ""
	Commit  = ""
)

// devVersion names a build with no version of its own.
const devVersion = "0.0.0-dev"

// buildVersion is the build's version, commit (with "-dirty" for a checkout
// with uncommitted changes) and commit time, from the linker's values or else
// the binary's build information.
func buildVersion() (version, commit, when string) {
	version, commit = Version, Commit
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return or(version, devVersion), commit, ""
	}
	if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if commit == "" {
				commit = s.Value
			}
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if commit != "" && dirty && Commit == "" {
		commit += "-dirty"
	}
	return or(version, devVersion), commit, when
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// versionLine is what `parley --version` prints: version, commit, commit
// time, platform and Go release.
func versionLine() string {
	v, c, when := buildVersion()
	var extra []string
	if c != "" {
		extra = append(extra, "commit "+c)
	}
	if when != "" {
		extra = append(extra, when)
	}
	extra = append(extra, runtime.GOOS+"/"+runtime.GOARCH, runtime.Version())
	return fmt.Sprintf("parley %s (%s)", v, strings.Join(extra, ", "))
}

// daemonVersion is the version the daemon reports (daemon status, doctor,
// MCP serverInfo): the version and a short commit.
func daemonVersion() string {
	v, c, _ := buildVersion()
	if c == "" {
		return v
	}
	if len(c) > 12 && !strings.HasSuffix(c, "-dirty") {
		c = c[:12]
	}
	return v + "+" + c
}
