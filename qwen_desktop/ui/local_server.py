"""The local API server (docs/server.md) switched on and off as the settings say."""

from __future__ import annotations

from qwen_desktop.ui.window_parts import WindowParts


class LocalServerSwitch(WindowParts):
    """Starts and stops the local API server as the settings say; its address in the status bar."""

    def sync_server(self) -> None:
        """Run the local API server (docs/server.md) as the settings say: on the window's own model, on
        127.0.0.1 at the chosen port, with the key if one is set."""
        s = self.settings
        want = (s.server_port, s.server_api_key or None) if s.server_enabled and not self._closing else None
        running = self.server
        if running is not None and (want is None or (running.port, running.config.api_key) != want):
            running.stop()
            self.server = None
        if want is None or self.server is not None:
            self._show_server(False)
            return
        from qwen_desktop.server import LocalServer, ServerConfig

        server = LocalServer(self.bridge.host, "127.0.0.1", want[0], ServerConfig(api_key=want[1]))
        try:
            server.start()
        except (OSError, RuntimeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            self.show_banner(
                self.tr("The local server could not start on port %1: %2")
                .replace("%1", str(want[0]))
                .replace("%2", reason)
            )
            self._show_server(False)
            return
        self.server = server
        self._show_server(False)

    def _show_server(self, busy: bool) -> None:
        self.status_bar.show_server(self.server, busy)

    def _on_api_activity(self, running: bool) -> None:
        self._show_server(running)
        if running and self.bridge.busy:
            self.status_label.setText(self.tr("Waiting for an API request to finish…"))
