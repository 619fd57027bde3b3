"""Context for agents: the wake block, active memory and research (SPEC §5)."""
