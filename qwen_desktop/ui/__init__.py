"""The Qt (PySide6) desktop interface."""
