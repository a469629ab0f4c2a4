"""Where things live on disk: paths, settings and the chat database. Plain Python: never imports Qt."""
