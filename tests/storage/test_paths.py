import sys
from pathlib import Path

import platformdirs
import pytest

from qwen_desktop.storage import paths


def test_home_env_holds_everything(qwen_home):
    assert not qwen_home.exists()
    assert paths.data_dir() == qwen_home
    assert qwen_home.is_dir()
    assert paths.database_path() == qwen_home / "chats.sqlite3"
    assert paths.settings_path() == qwen_home / "settings.json"
    assert paths.models_dir() == qwen_home / "models"
    assert (qwen_home / "models").is_dir()


def test_models_dir_override_is_created(tmp_path):
    chosen = tmp_path / "elsewhere" / "models"
    assert paths.models_dir(str(chosen)) == chosen
    assert chosen.is_dir()
    assert paths.models_dir("") == paths.data_dir() / "models"


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_DATA_HOME only redirects platformdirs on Linux")
def test_platform_data_dir_without_home_env(tmp_path, monkeypatch):
    monkeypatch.delenv(paths.HOME_ENV)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    expected = Path(platformdirs.user_data_dir("QwenDesktop", appauthor=False))
    assert expected.is_relative_to(tmp_path)
    assert paths.data_dir() == expected
    assert expected.is_dir()
