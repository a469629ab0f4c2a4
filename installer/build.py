"""Build the Linux artefacts in one command: freeze -> smoke test -> .deb and .tar.gz -> test the installed .deb.

    python installer/build.py                       # dist/qwen-desktop_<version>_<arch>.deb and a .tar.gz
    python installer/build.py --with-model M.gguf   # the same with a model inside, for a fully offline first run
    python installer/build.py --skip-freeze         # reuse dist/qwen-desktop/ from an earlier run

Needs: pyinstaller (``pip install '.[package]'``), dpkg-deb, ldd, and dpkg -S to name the system libraries the
bundle links to. See docs/packaging.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "installer"))

from smoke import SmokeError, check_bundled_first_run, check_version, clean_env, smoke_test  # noqa: E402

from qwen_desktop import __version__  # noqa: E402

APP = "qwen-desktop"
DIST = ROOT / "dist"
BUNDLE = DIST / APP
ICON = ROOT / "resources" / "qwen-desktop.png"
PREFIX = f"/opt/{APP}"

DESKTOP_ENTRY = """\
[Desktop Entry]
Type=Application
Name=Qwen Desktop
GenericName=Offline AI chat
Comment=Chat with a local Qwen2.5 model, offline, on your computer
Exec=qwen-desktop
Icon=qwen-desktop
Terminal=false
Categories=Utility;
Keywords=AI;chat;LLM;Qwen;assistant;offline;
StartupNotify=true
StartupWMClass=qwen-desktop
"""

# Maintainer scripts refresh the menu and icon caches. They never touch anything under a home folder: removing or
# purging the package leaves the user's chats, settings and models (~/.local/share/QwenDesktop) where they are.
POSTINST = """\
#!/bin/sh
set -e
if [ "$1" = "configure" ]; then
    command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q /usr/share/applications || true
    command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t /usr/share/icons/hicolor || true
fi
exit 0
"""
POSTRM = """\
#!/bin/sh
set -e
# Only system-wide caches are refreshed; user data (~/.local/share/QwenDesktop) is never removed, not even on purge.
if [ "$1" = "remove" ] || [ "$1" = "purge" ]; then
    command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q /usr/share/applications || true
    command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t /usr/share/icons/hicolor || true
fi
exit 0
"""

# System packages every Linux desktop has and Qt's xcb/wayland plugins load, whether or not PyInstaller bundled a
# copy on the build machine (what it bundles depends on what that machine has installed). The libraries the bundle
# links to but does not carry are added to these by ldd + dpkg -S at build time.
BASE_DEPENDS = [
    "libgl1",
    "libegl1",
    "libfontconfig1",
    "libfreetype6",
    "libdbus-1-3",
    "libxkbcommon0",
    "libxkbcommon-x11-0",
    "libxcb1",
    "libxcb-cursor0",
    "libxcb-icccm4",
    "libxcb-keysyms1",
    "libxcb-image0",
    "libxcb-render-util0",
    "libxcb-randr0",
    "libxcb-shape0",
    "libxcb-xfixes0",
    "libxcb-xkb1",
    "libx11-xcb1",
    "libwayland-client0",
    "libwayland-cursor0",
    "libwayland-egl1",
]
# Libraries that may be missing on the build machine (so dpkg -S cannot name them): their Debian/Ubuntu packages.
KNOWN_LIBRARIES = {
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
    "libwayland-client.so.0": "libwayland-client0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libgtk-3.so.0": "",  # only the qgtk3 theme plugin, which build.spec leaves out
    "libgdk-3.so.0": "",
}
RECOMMENDS = (
    "fonts-noto-cjk | fonts-wqy-microhei"  # Chinese text (the app is translated to zh_CN) needs a CJK font
)


def log(text: str) -> None:
    print(f"[build] {text}", flush=True)


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def tree_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def freeze() -> float:
    """Run PyInstaller on build.spec into dist/qwen-desktop; return the seconds it took."""
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN", "build.spec"]
    log(" ".join(cmd[1:]))
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.perf_counter() - start


def strip_debug_info(bundle: Path) -> int:
    """Strip debug sections from the Python interpreter's own libraries in the bundle; return bytes saved.

    A pyenv-built libpython carries ~20 MB of DWARF data. Only the interpreter's files are touched: wheels'
    libraries (numpy.libs/, ...) are rewritten by auditwheel/patchelf, and strip can break those.
    """
    if shutil.which("strip") is None:
        log("strip not found: keeping debug info in libpython")
        return 0
    internal = bundle / "_internal"
    targets = [p for p in internal.glob("libpython3*.so*") if not p.is_symlink()]
    targets += list(internal.glob("python3*/lib-dynload/*.so"))
    before = sum(p.stat().st_size for p in targets)
    for path in targets:
        subprocess.run(["strip", "--strip-debug", str(path)], check=True)
    return before - sum(p.stat().st_size for p in targets)


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def external_libraries(bundle: Path) -> tuple[dict[str, str], set[str]]:
    """Libraries the bundle's ELF files load from the system: ({soname: path}, {sonames not found})."""
    lib_dirs = sorted({str(p.parent) for p in bundle.rglob("*.so*") if p.is_file()})
    env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(lib_dirs)}
    found: dict[str, str] = {}
    missing: set[str] = set()
    for path in bundle.rglob("*"):
        if not path.is_file() or path.is_symlink() or not is_elf(path):
            continue
        out = subprocess.run(["ldd", str(path)], env=env, capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            name, arrow, target = line.strip().partition(" => ")
            if not arrow:
                continue
            if target.startswith("not found"):
                missing.add(name)
            else:
                lib = target.split(" (", 1)[0]
                if lib and not lib.startswith(str(bundle)):
                    found[name] = lib
    missing -= set(found)
    return found, missing


def debian_depends(bundle: Path) -> list[str]:
    """The .deb's Depends: the base list plus the packages owning the system libraries the bundle loads."""
    found, missing = external_libraries(bundle)
    packages = set(BASE_DEPENDS)
    for soname, path in sorted(found.items()):
        real = str(Path(path).resolve())
        owner = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True, check=False)
        if owner.returncode != 0:  # e.g. /lib -> /usr/lib merged paths: try the unresolved one
            owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=False)
        if owner.returncode == 0:
            packages.add(owner.stdout.split(":", 1)[0])
        else:
            log(f"warning: no package owns {path} ({soname}); not in Depends")
    for soname in sorted(missing):
        package = KNOWN_LIBRARIES.get(soname)
        if package is None:
            log(f"warning: {soname} is needed by the bundle but not found here and has no known package")
        elif package:
            packages.add(package)
    glibc = os.confstr("CS_GNU_LIBC_VERSION") or ""  # e.g. "glibc 2.36": the bundle needs at least this one
    packages.discard("libc6")
    depends = sorted(packages)
    if glibc.startswith("glibc "):
        depends.insert(0, f"libc6 (>= {glibc.split()[1]})")
    return depends


def prepare_model(exe: Path, source: Path, dest_root: Path) -> Path:
    """Put a model folder under ``dest_root`` for --with-model: copy a built folder, or build a GGUF/HF source
    with the frozen ``build-model`` (which also proves the bundled builder works)."""
    dest_root.mkdir(parents=True, exist_ok=True)
    if (source / "manifest.json").is_file():
        dest = dest_root / source.name
        shutil.copytree(source, dest)
        return dest
    name = source.stem if source.is_file() else source.name
    dest = dest_root / name.lower().replace(" ", "-")
    with tempfile.TemporaryDirectory(prefix="qwen-desktop-model-") as tmp:
        log(f"building {source} into the bundle with the frozen build-model")
        subprocess.run(
            [str(exe), "build-model", str(source), str(dest)], env=clean_env(Path(tmp)), check=True
        )
    return dest


def stage_deb(bundle: Path, stage: Path, models: Path | None) -> Path:
    """Lay out the .deb's file tree under ``stage``; return the DEBIAN folder (control written later)."""
    opt = stage / PREFIX.lstrip("/")
    shutil.copytree(bundle, opt, symlinks=True)
    if models is not None:
        shutil.copytree(models, opt / "models")
    usr_bin = stage / "usr" / "bin"
    usr_bin.mkdir(parents=True)
    # The PyInstaller bootloader finds its _internal/ through /proc/self/exe, so a plain symlink works.
    (usr_bin / APP).symlink_to(f"{PREFIX}/{APP}")
    apps = stage / "usr" / "share" / "applications"
    apps.mkdir(parents=True)
    (apps / f"{APP}.desktop").write_text(DESKTOP_ENTRY)
    icons = stage / "usr" / "share" / "icons" / "hicolor" / "256x256" / "apps"
    icons.mkdir(parents=True)
    shutil.copy2(ICON, icons / f"{APP}.png")
    debian = stage / "DEBIAN"
    debian.mkdir()
    for name, text in (("postinst", POSTINST), ("postrm", POSTRM)):
        script = debian / name
        script.write_text(text)
        script.chmod(0o755)
    return debian


def architecture() -> str:
    return subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()


def build_deb(bundle: Path, out_dir: Path, models: Path | None, fast: bool = False) -> Path:
    """Build ``qwen-desktop_<version>_<arch>.deb`` in ``out_dir`` with dpkg-deb from a staging tree.

    ``models`` is a folder of model folders to install as /opt/qwen-desktop/models (--with-model). ``fast``
    compresses with gzip -1 instead of xz (tests: ~10x faster to build, ~40% larger).
    """
    arch = architecture()
    suffix = "-with-model" if models is not None else ""
    deb = out_dir / f"{APP}{suffix}_{__version__}_{arch}.deb"
    with tempfile.TemporaryDirectory(prefix="qwen-desktop-deb-") as tmp:
        stage = Path(tmp) / "root"
        debian = stage_deb(bundle, stage, models)
        installed_kb = (tree_bytes(stage) + 1023) // 1024
        control = {
            "Package": APP,
            "Version": __version__,
            "Architecture": arch,
            "Maintainer": "Qwen Desktop developers <qwen-desktop@localhost>",
            "Installed-Size": str(installed_kb),
            "Depends": ", ".join(debian_depends(bundle)),
            "Recommends": RECOMMENDS,
            "Section": "utils",
            "Priority": "optional",
            "Description": "Offline chat with a small local Qwen2.5 model\n"
            " Qwen Desktop runs Qwen2.5 language models on the CPU through ONNX Runtime.\n"
            " No account and no network: chats and models stay on this computer.",
        }
        (debian / "control").write_text("".join(f"{k}: {v}\n" for k, v in control.items()))
        log(f"dpkg-deb --build -> {deb.name}")
        subprocess.run(
            [
                "dpkg-deb",
                "--root-owner-group",
                *(["-Zgzip", "-z1"] if fast else ["-Zxz"]),
                "--build",
                str(stage),
                str(deb),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return deb


def build_tarball(bundle: Path, out_dir: Path, models: Path | None, fast: bool = False) -> Path:
    """A portable ``qwen-desktop-<version>-linux-<arch>.tar.gz``: unpack anywhere, run ./qwen-desktop.

    Next to the bundle: share/ with the icon and a desktop entry (Exec= to be set to the unpacked path if the
    user wants a menu entry), and models/ with --with-model.
    """
    suffix = "-with-model" if models is not None else ""
    top = f"{APP}-{__version__}"
    tarball = out_dir / f"{APP}{suffix}-{__version__}-linux-{os.uname().machine}.tar.gz"
    with tempfile.TemporaryDirectory(prefix="qwen-desktop-tar-") as tmp:
        entry = Path(tmp) / f"{APP}.desktop"
        entry.write_text(DESKTOP_ENTRY)
        log(f"tar -> {tarball.name}")
        with tarfile.open(tarball, "w:gz", compresslevel=1 if fast else 6) as tar:
            tar.add(bundle, arcname=top)
            tar.add(ICON, arcname=f"{top}/share/{APP}.png")
            tar.add(entry, arcname=f"{top}/share/{APP}.desktop")
            if models is not None:
                tar.add(models, arcname=f"{top}/models")
    return tarball


def check_tarball(tarball: Path, with_model: bool) -> None:
    """Unpack the tarball into a temporary folder: the desktop entry is there, the unpacked app runs, and with
    a model inside it answers on a clean data folder with no import (the model found beside the executable)."""
    with tempfile.TemporaryDirectory(prefix="qwen-desktop-untar-") as tmp:
        with tarfile.open(tarball) as tar:
            tar.extractall(Path(tmp) / "unpacked", filter="tar")
        top = Path(tmp) / "unpacked" / f"{APP}-{__version__}"
        if not (top / "share" / f"{APP}.desktop").is_file():
            raise SmokeError(f"share/{APP}.desktop missing from {tarball.name}")
        exe = top / APP
        check_version(exe, clean_env(Path(tmp) / "home"))
        if with_model:
            check_bundled_model(exe, top / "models")


def check_deb(deb: Path, with_model: bool) -> None:
    """Unpack the .deb into a temporary root (dpkg -x) and smoke-test the installed executable."""
    info = subprocess.run(["dpkg-deb", "--info", str(deb)], capture_output=True, text=True, check=True).stdout
    for needed in (f"Package: {APP}", f"Version: {__version__}", "Depends:", "postinst", "postrm"):
        if needed not in info:
            raise SmokeError(f"{deb.name}: '{needed}' missing from dpkg-deb --info:\n{info}")
    with tempfile.TemporaryDirectory(prefix="qwen-desktop-root-") as tmp:
        root = Path(tmp) / "root"
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
        link = root / "usr" / "bin" / APP
        if not link.is_symlink() or str(link.readlink()) != f"{PREFIX}/{APP}":
            raise SmokeError(f"/usr/bin/{APP} should be a symlink to {PREFIX}/{APP}")
        desktop = root / "usr" / "share" / "applications" / f"{APP}.desktop"
        icon = root / "usr" / "share" / "icons" / "hicolor" / "256x256" / "apps" / f"{APP}.png"
        for path in (desktop, icon):
            if not path.is_file():
                raise SmokeError(f"{path.relative_to(root)} missing from {deb.name}")
        if shutil.which("desktop-file-validate"):
            subprocess.run(["desktop-file-validate", str(desktop)], check=True)
        exe = root / PREFIX.lstrip("/") / APP
        log(f"smoke test of the installed package ({exe.relative_to(root)})")
        report = smoke_test(exe, window_runs=1, log=log)
        log("installed package: " + report.summary().replace("\n", "; "))
        if with_model:
            check_bundled_model(exe, root / PREFIX.lstrip("/") / "models")


def check_bundled_model(exe: Path, models: Path) -> None:
    """The installed app finds the bundled model by itself: a clean data folder, no import, an answer."""
    folders = [p for p in models.iterdir() if (p / "manifest.json").is_file()]
    if not folders:
        raise SmokeError(f"no model folder in {models}")
    with tempfile.TemporaryDirectory(prefix="qwen-desktop-smoke-") as tmp:
        answer = check_bundled_first_run(exe, Path(tmp))
    log(f"bundled model {folders[0].name}, found with no import, answers 'hi' with {answer!r}")


def du_top(bundle: Path, count: int = 12) -> list[tuple[int, str]]:
    """The largest entries of the bundle (PySide6/ and onnxruntime/ one level deeper), biggest first.

    Symlinks (PyInstaller links duplicated libraries to one copy) count as nothing, as in ``du``.
    """

    def size(path: Path) -> int:
        if path.is_symlink():
            return 0
        return tree_bytes(path) if path.is_dir() else path.stat().st_size

    sizes: list[tuple[int, str]] = []
    for entry in (bundle / "_internal").iterdir():
        parts = (
            list(entry.iterdir()) if entry.name in ("PySide6", "onnxruntime") and entry.is_dir() else [entry]
        )
        sizes += [(size(p), str(p.relative_to(bundle))) for p in parts]
    return sorted(sizes, reverse=True)[:count]


def parse_args(argv: Iterable[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Freeze, smoke-test and package Qwen Desktop for Linux.")
    parser.add_argument(
        "--skip-freeze", action="store_true", help="reuse dist/qwen-desktop from an earlier run"
    )
    parser.add_argument(
        "--skip-smoke", action="store_true", help="package without smoke tests (not for release)"
    )
    parser.add_argument(
        "--with-model",
        type=Path,
        metavar="PATH",
        help="bundle a model: a built model folder (manifest.json), a .gguf file or a Hugging Face folder",
    )
    parser.add_argument(
        "--out", type=Path, default=DIST, help="where the .deb and .tar.gz go (default dist/)"
    )
    parser.add_argument("--no-tarball", action="store_true", help="build only the .deb")
    parser.add_argument("--fast", action="store_true", help="light compression (quick test builds)")
    return parser.parse_args(None if argv is None else list(argv))


def main(argv: Iterable[str] | None = None) -> int:
    args = parse_args(argv)
    if args.with_model is not None and not args.with_model.exists():
        print(f"build.py: error: {args.with_model} does not exist", file=sys.stderr)
        return 2
    figures: list[str] = []
    if not args.skip_freeze:
        seconds = freeze()
        figures.append(f"freeze: {seconds:.0f} s")
        log(f"stripped {human(strip_debug_info(BUNDLE))} of debug info from the interpreter's libraries")
    exe = BUNDLE / APP
    if not exe.is_file():
        print(f"build.py: error: {exe} missing; run without --skip-freeze", file=sys.stderr)
        return 2
    try:
        if not args.skip_smoke:
            report = smoke_test(exe, log=log)
            log("frozen bundle: " + report.summary().replace("\n", "; "))
            figures.append(
                f"window shown (offscreen, median of {len(report.window_seconds)}): "
                f"{sorted(report.window_seconds)[len(report.window_seconds) // 2]:.2f} s"
            )
        args.out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="qwen-desktop-models-") as tmp:
            models = None
            if args.with_model is not None:
                models = Path(tmp) / "models"
                bundled = prepare_model(exe, args.with_model.resolve(), models)
                figures.append(f"bundled model {bundled.name}: {human(tree_bytes(bundled))}")
            deb = build_deb(BUNDLE, args.out, models, args.fast)
            artefacts = [deb]
            if not args.no_tarball:
                artefacts.append(build_tarball(BUNDLE, args.out, models, args.fast))
        if not args.skip_smoke:
            check_deb(deb, with_model=args.with_model is not None)
            if len(artefacts) > 1:
                check_tarball(artefacts[1], with_model=args.with_model is not None)
    except SmokeError as exc:
        print(f"build.py: smoke test FAILED: {exc}", file=sys.stderr)
        return 1
    figures.append(f"bundle: {human(tree_bytes(BUNDLE))} in {BUNDLE.relative_to(ROOT)}")
    figures += [f"{p.name}: {human(p.stat().st_size)}" for p in artefacts]
    log("largest parts of the bundle:")
    for size, name in du_top(BUNDLE):
        log(f"  {human(size):>9}  {name}")
    for line in figures:
        log(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
