#!/usr/bin/env bash
# Build "Qwen Desktop.app" with PyInstaller (build.spec's BUNDLE step) and wrap it in a .dmg with hdiutil.
#
# UNTESTED HERE: written on Linux with no Mac to run it. See docs/packaging.md, "macOS".
#
#   pip install ".[package]" pillow      # Pillow lets PyInstaller turn resources/qwen-desktop.png into .icns
#   installer/macos/make-dmg.sh          # -> dist/qwen-desktop-<version>-macos-<arch>.dmg
#
# The app is not signed or notarized: on first launch users right-click > Open (or run
# `xattr -dr com.apple.quarantine "/Applications/Qwen Desktop.app"`). Signing needs an Apple Developer ID:
#   codesign --deep --force --options runtime --sign "Developer ID Application: ..." "dist/Qwen Desktop.app"
# then `xcrun notarytool submit ... --wait` and `xcrun stapler staple` on the .dmg.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION=$(python3 -c 'import qwen_desktop; print(qwen_desktop.__version__)')
ARCH=$(uname -m)
APP="dist/Qwen Desktop.app"
DMG="dist/qwen-desktop-${VERSION}-macos-${ARCH}.dmg"

python3 -m PyInstaller --noconfirm build.spec
test -d "$APP" || { echo "make-dmg.sh: $APP was not built" >&2; exit 1; }

# Smoke test: the executable inside the .app answers --version.
"$APP/Contents/MacOS/qwen-desktop" --version

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"   # drag-to-install target in the mounted image
rm -f "$DMG"
hdiutil create -volname "Qwen Desktop" -srcfolder "$STAGE" -fs HFS+ -format UDZO -ov "$DMG"
echo "$DMG"
