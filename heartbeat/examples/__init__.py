"""Runnable examples (a gateway) and recorded observations for the dry run."""
