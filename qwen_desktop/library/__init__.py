"""The model library: the catalogue, downloads from the hub, and the models installed in the models folder.

Installing runs the converter (``convert``); reading a folder is the engine's (``engine.model_files``).
Plain Python: this package never imports Qt.
"""
