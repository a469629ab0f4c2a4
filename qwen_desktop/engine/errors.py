"""Errors whose message is meant for the person using the app or the CLI."""


class ModelError(Exception):
    """A model file or folder cannot be used; the message says why in one line."""


class UnsupportedModelError(ModelError):
    """The weights are readable but are not a Qwen2 model (or use a feature we do not support)."""


class OutputError(ModelError):
    """The output folder cannot be written (exists already, not writable, disk full)."""
