"""Allow ``python -m qwen_desktop``."""

from qwen_desktop.cli import main

raise SystemExit(main())
