"""A PEP 517 build backend for the agentmem client, standard library only.

`pip install ./clients/python` builds the package with it: no setuptools,
wheel or network is needed, so the install works offline as the client
does (it has no dependencies). It builds a pure-Python wheel (and an
sdist, and PEP 660 editable wheels) from the files of the agentmem
package; the version is agentmem/__init__.py's __version__.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent
NAME = "agentmem"
SUMMARY = "The Python client of agentmem, the memory layer for LLM agents, with an OpenAI Agents SDK session"
REQUIRES_PYTHON = ">=3.9"
LICENSE = "Apache-2.0"
CLASSIFIERS = [
    "License :: OSI Approved :: Apache Software License",
    "Programming Language :: Python :: 3",
    "Framework :: AsyncIO",
    "Typing :: Typed",
]
TAG = "py3-none-any"


def version() -> str:
    """The package's version, from agentmem/__init__.py."""
    m = re.search(r'^__version__ = "([^"]+)"$', (ROOT / NAME / "__init__.py").read_text("utf-8"), re.M)
    if not m:
        raise RuntimeError("agentmem/__init__.py has no __version__")
    return m.group(1)


def license_text() -> bytes:
    """The license's text: LICENSE beside this file in an sdist, the
    repository's in a checkout."""
    for p in (ROOT / "LICENSE", ROOT.parents[1] / "LICENSE"):
        if p.is_file():
            return p.read_bytes()
    raise RuntimeError("no LICENSE file beside build_backend.py or at the repository's root")


def metadata() -> str:
    """The core metadata (METADATA / PKG-INFO), version 2.1."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version()}",
        f"Summary: {SUMMARY}",
        f"License: {LICENSE}",
        f"Requires-Python: {REQUIRES_PYTHON}",
    ]
    lines += [f"Classifier: {c}" for c in CLASSIFIERS]
    readme = ROOT / "README.md"
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + (readme.read_text("utf-8") if readme.exists() else "")


def package_files() -> List[Path]:
    """The files of the package: its modules and py.typed."""
    pkg = ROOT / NAME
    return sorted(p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".typed"))


def _dist_info() -> str:
    return f"{NAME}-{version()}.dist-info"


def _write_wheel(wheel_directory: str, files: List[Tuple[str, bytes]]) -> str:
    """Writes a wheel of the given (archive name, content) files, with its
    dist-info and RECORD, and returns its file name."""
    info = _dist_info()
    files = files + [
        (f"{info}/METADATA", metadata().encode("utf-8")),
        (f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: agentmem build_backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode()),
        (f"{info}/top_level.txt", f"{NAME}\n".encode()),
        (f"{info}/LICENSE", license_text()),
    ]
    record = io.StringIO()
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{name},sha256={digest},{len(data)}\n")
    record.write(f"{info}/RECORD,,\n")
    files.append((f"{info}/RECORD", record.getvalue().encode()))
    filename = f"{NAME}-{version()}-{TAG}.whl"
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]
    with zipfile.ZipFile(Path(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            zi = zipfile.ZipInfo(name, date_time=stamp)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return filename


# --- PEP 517 and PEP 660 hooks ---------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict] = None, metadata_directory: Optional[str] = None) -> str:
    files = [(p.relative_to(ROOT).as_posix(), p.read_bytes()) for p in package_files()]
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory: str, config_settings: Optional[Dict] = None, metadata_directory: Optional[str] = None) -> str:
    # A .pth file puts this directory on sys.path: edits show at once.
    return _write_wheel(wheel_directory, [(f"__editable__.{NAME}.pth", (str(ROOT) + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict] = None) -> str:
    base = f"{NAME}-{version()}"
    filename = base + ".tar.gz"
    with tarfile.open(Path(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        paths = [ROOT / "pyproject.toml", ROOT / "build_backend.py", ROOT / "README.md"] + package_files()
        for p in paths:
            if p.exists():
                tar.add(p, arcname=f"{base}/{p.relative_to(ROOT).as_posix()}")
        for name, data in (("PKG-INFO", metadata().encode("utf-8")), ("LICENSE", license_text())):
            ti = tarfile.TarInfo(f"{base}/{name}")
            ti.size, ti.mtime, ti.mode = len(data), 315532800, 0o644
            tar.addfile(ti, io.BytesIO(data))
    return filename
