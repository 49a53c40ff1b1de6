"""The bench's own virtual environment: ``.bench-venv/`` with the peers and this project installed."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from bench._harness import REPO

VENV = REPO / ".bench-venv"

# Pinned so that ratios are comparable between runs; bump deliberately and re-run.
PEERS = [
    "cendor-cassette==1.1.1",
    "cendor-core==1.21.0",
    "vcrpy==9.4.2",
    "pytest-recording==0.14.1",
    "cassetter==0.16.1",
    "detect-secrets==1.5.0",
    "pyyaml>=6",
    "pytest>=8",
]
# the workloads drive the OpenAI SDK, which is an extra of ours (the SDK is the user's choice)
OURS = ["-e", f"{REPO}[openai]"]


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def inside() -> bool:
    """Whether this interpreter is the bench venv's."""
    try:
        return Path(sys.prefix).resolve() == VENV.resolve()
    except OSError:
        return False


def _stamp() -> str:
    """What the venv was built from: the install lists and our pyproject (a change re-installs)."""
    digest = hashlib.sha256("\n".join(PEERS + OURS).encode())
    digest.update((REPO / "pyproject.toml").read_bytes())
    return digest.hexdigest()


def ensure() -> Path:
    """Create or update ``.bench-venv`` (only when the peer list or pyproject changed); its python."""
    python = venv_python()
    stamp_file = VENV / "bench-stamp.txt"
    if python.exists() and stamp_file.exists() and stamp_file.read_text().strip() == _stamp():
        return python
    if not python.exists():
        print(f"bench: creating {VENV} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    print("bench: installing the peers and this project into it (pip) ...", flush=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    for args in (PEERS, OURS):
        done = subprocess.run([*pip, *args], capture_output=True, text=True)
        if done.returncode != 0:  # the build backend's warnings are noise unless it failed
            sys.stderr.write(done.stdout + done.stderr)
            raise SystemExit(f"bench: pip install {' '.join(args)} failed (exit {done.returncode})")
    stamp_file.write_text(_stamp() + "\n")
    return python


def reexec(argv: list[str]) -> None:
    """Replace this process by ``python -m bench argv`` inside the bench venv."""
    python = ensure()
    os.chdir(REPO)
    os.execv(str(python), [str(python), "-m", "bench", *argv])
