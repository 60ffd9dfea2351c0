"""Placeholder: being written (see the open issue)."""
