package api

import "testing"

// TestAttestation: a daemon notice about an agent (a stopped loop) says so.
func TestAttestation(t *testing.T) {
	if got := (Provenance{Sender: "worker", Kind: KindParley, Workspace: "w", Via: "daemon"}).Attestation(); got != "Parley's own notice about agent worker in workspace w, via daemon" {
		t.Errorf("attestation: got %q", got)
	}
}
