-- Schema version 10: which daemon (node) handed a leased delivery out, so
-- that a daemon starting again puts back the leases of its own readers of
-- before, and only those: daemons that share the database keep theirs.
-- NULL for leases handed out before this version: they run out as before.
ALTER TABLE deliveries ADD COLUMN lease_node text;
