"""Who may connect (TLS, SASL) and what they may touch (ACLs)."""
