"""workstation: a terminal chat workstation for local LLMs."""

__version__ = "0.1.0"
