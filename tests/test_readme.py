"""The README a newcomer reads: two set-up commands (the second is what CI runs), figures that come from the
code, and links to things the repository has."""

from __future__ import annotations

import re
from pathlib import Path

from qwen_desktop.library.progress import build_plan, plan_minutes

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def test_setting_up_is_two_commands_and_ci_runs_the_second():
    blocks = re.findall(r"```sh\n(.*?)\n```", section("Set up on a fresh machine"), re.DOTALL)
    assert len(blocks) == 2 and all("\n" not in b for b in blocks), blocks
    install, tests = blocks
    # PEP 668: Debian's and Ubuntu's Python refuse a pip install outside a venv
    assert install.startswith("python3 -m venv ") and install.endswith("qwen-desktop")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().splitlines()[-1].replace(" -q", "") == tests


def test_the_minutes_an_import_takes_come_from_the_measured_phase_costs():
    minutes = plan_minutes(build_plan())
    said = re.findall(r"about (\d+) minutes?\b", README)
    assert said and {int(m) for m in said} == {minutes}


def test_it_points_only_at_what_the_repository_has():
    assert "../shared" not in README
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target
