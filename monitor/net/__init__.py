"""Network plumbing shared by the receivers and the admin server (no pipeline logic)."""
