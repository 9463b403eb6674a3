"""The package installs with pip (offline: standard library and the
setuptools already installed) and imports from where it was installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import tarfile
import zipfile
import sys
import tempfile
import unittest
from pathlib import Path

from ._server import unavailable

HERE = Path(__file__).resolve().parents[1]


class PackageTest(unittest.TestCase):
    def test_pip_install(self) -> None:
        probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
        if probe.returncode != 0:
            raise unavailable("needs pip to test `pip install ./clients/python`")
        before = sorted(str(p) for p in HERE.rglob("*") if "__pycache__" not in p.parts)
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp, "site")
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(target), str(HERE)],
                capture_output=True,
                text=True,
            )
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertTrue((target / "agentmem" / "py.typed").exists())
            self.assertFalse((target / "tests").exists())
            after = sorted(str(p) for p in HERE.rglob("*") if "__pycache__" not in p.parts)
            self.assertEqual(before, after, "the build wrote into the source tree")
            env = dict(os.environ, PYTHONPATH=str(target))
            out = subprocess.run(
                [sys.executable, "-c", "import agentmem, sys; print(agentmem.__file__); print(agentmem.__version__); agentmem.Client('http://localhost:8080'); agentmem.AgentmemSession('s', agentmem.AsyncClient('http://localhost:8080'))"],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp,
            )
            self.assertEqual(out.returncode, 0, out.stderr)
            path, version = out.stdout.split()
            self.assertTrue(path.startswith(str(target)), path)
            self.assertEqual(version, "0.1.0")


    def test_sdist_and_editable(self) -> None:
        spec = importlib.util.spec_from_file_location("build_backend", HERE / "build_backend.py")
        assert spec and spec.loader
        backend = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(backend)
        import agentmem

        with tempfile.TemporaryDirectory() as tmp:
            sdist = backend.build_sdist(tmp)
            self.assertEqual(sdist, f"agentmem-{agentmem.__version__}.tar.gz")
            with tarfile.open(Path(tmp, sdist)) as tar:
                names = set(tar.getnames())
            base = f"agentmem-{agentmem.__version__}/"
            for want in ("pyproject.toml", "build_backend.py", "PKG-INFO", "LICENSE", "agentmem/__init__.py", "agentmem/py.typed"):
                self.assertIn(base + want, names)
            with tarfile.open(Path(tmp, sdist)) as tar:
                pkg_info = tar.extractfile(base + "PKG-INFO").read().decode()
                license_text = tar.extractfile(base + "LICENSE").read()
            self.assertIn("\nLicense: Apache-2.0\n", pkg_info)
            self.assertIn(b"Apache License", license_text)
            wheel = backend.build_editable(tmp)
            with zipfile.ZipFile(Path(tmp, wheel)) as z:
                pth = z.read("__editable__.agentmem.pth").decode().strip()
                record = z.read(f"agentmem-{agentmem.__version__}.dist-info/RECORD").decode()
                wheel_license = z.read(f"agentmem-{agentmem.__version__}.dist-info/LICENSE")
            self.assertEqual(Path(pth), HERE)
            self.assertIn("__editable__.agentmem.pth,sha256=", record)
            self.assertIn(b"Apache License", wheel_license)


if __name__ == "__main__":
    unittest.main()
