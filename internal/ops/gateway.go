package ops

import (
	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/gateway"
)

// Upstreams renders the gateway's upstreams for the wire.
func Upstreams(sts []gateway.Status) []api.UpstreamStatus {
	out := make([]api.UpstreamStatus, len(sts))
	for i, s := range sts {
		out[i] = api.UpstreamStatus{Name: s.Name, Transport: s.Transport, Target: s.Target, Enabled: s.Enabled,
			State: s.State, Error: s.Error, Restarts: s.Restarts, Tools: s.Tools, Since: s.Since, NextRetry: s.NextRetry,
			Server: s.Server, Protocol: s.Protocol, Timeout: s.Timeout, Retries: s.Retries}
	}
	return out
}
