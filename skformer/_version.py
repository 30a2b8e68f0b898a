"""Version of the skformer package."""

__version__ = "0.1.0"
