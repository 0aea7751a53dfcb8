package nudge

// Nudged counts the notices typed so far (for the tests: the product only
// types them).
func (n *Nudger) Nudged() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nudged
}
