; Inno Setup script for Qwen Desktop on Windows.
;
; UNTESTED HERE: written on Linux with no Windows machine to run it. See docs/packaging.md, "Windows".
;
; Build on Windows (Python 3.10+, Inno Setup 6):
;   pip install ".[package]"
;   pyinstaller --noconfirm build.spec
;   for /f %v in ('python -c "import qwen_desktop; print(qwen_desktop.__version__)"') do set VER=%v
;   iscc /DAppVersion=%VER% installer\windows\qwen-desktop.iss
; Output: dist\qwen-desktop-<version>-setup.exe
;
; build.spec makes two executables on Windows that share one _internal\ folder: qwen-desktop.exe (windowed:
; the app, no console flashing) and qwen-desktop-cli.exe (console: build-model, chat, download ...).
; The uninstaller removes only what this installer put in {app}: chats, settings and models in
; %LOCALAPPDATA%\QwenDesktop stay.

#ifndef AppVersion
  #error Pass the version: iscc /DAppVersion=<qwen_desktop.__version__> installer\windows\qwen-desktop.iss
#endif

#define AppName "Qwen Desktop"
#define AppExe "qwen-desktop.exe"
#define BundleDir "..\..\dist\qwen-desktop"

[Setup]
AppId={{6F1C5A2E-4B7D-4E51-9C3A-2D8E7B0F4A61}
AppName={#AppName}
AppVersion={#AppVersion}
AppPublisher=Qwen Desktop developers
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
; Per-user install by default (no administrator rights needed); the dialog offers all users.
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=qwen-desktop-{#AppVersion}-setup
SetupIconFile=..\..\resources\qwen-desktop.ico
UninstallDisplayIcon={app}\{#AppExe}
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

; No [UninstallDelete] entries on purpose: user data lives outside {app} and is never deleted.
