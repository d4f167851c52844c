"""A clean install, as a user makes one: the wheel built from this checkout, installed into a
fresh virtualenv with no extras (`pip install lockstep`), run from a directory that is not the
checkout. And the same wheel beside distributions that own the import names `timing`,
`infra`, `policies` and `heartbeat`, run from a Pulumi project with its own `infra/` and
`policies/`: lockstep's one top-level import name is `lockstep`, so neither breaks the other.

Slow-ish (a wheel build and two virtualenvs, ~15 s, most of it pip): pip's cache makes the
second run cheaper. Needs the package registry (PyPI) for pydantic and PyYAML, as any install
does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "tests" / "audit" / "corpus" / "alb-ip-gated"
# What the wheel is built from: the checkout without its caches, venv, VCS data and tests.
SKIP = {".git", ".venv", "mutants", ".hypothesis", ".cache", "tests", "build", "node_modules", "__pycache__"}
OTHERS = ("timing", "infra", "policies", "heartbeat")


def run(*cmd: str | Path, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    if ok:
        assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src") / "lockstep"
    shutil.copytree(ROOT, src, symlinks=True, ignore=lambda _d, names: [n for n in names if n in SKIP
                                                                          or n.endswith(".egg-info")])
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", out, src, cwd=src)
    (built,) = out.glob("lockstep-*.whl")
    return built


def venv(path: Path, *packages: str | Path) -> Path:
    """A fresh virtualenv with `packages` installed by pip (this interpreter's pip, aimed at the
    new environment with `--python`: the venv's own copy of pip, which nothing here runs,
    took ~5 s to install per venv)."""
    run(sys.executable, "-m", "venv", "--without-pip", path, cwd=path.parent)
    run(sys.executable, "-m", "pip", "--python", path / "bin" / "python", "install", "--quiet",
        "--disable-pip-version-check", *packages, cwd=path.parent)
    return path / "bin"


def test_the_wheel_installs_one_top_level_package_and_the_example_inside_it(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"lockstep"}
    # every package folder of the checkout is in the wheel (pyproject.toml lists them by hand)
    for init in sorted(ROOT.glob("*/**/__init__.py")):
        folder = init.parent.relative_to(ROOT)
        if folder.parts[0] in ("timing", "infra", "policies", "heartbeat"):
            assert f"lockstep/{folder.as_posix()}/__init__.py" in names, folder
    example = zipfile.ZipFile(wheel).read("lockstep/timing/bundled/Pulumi.example.yaml")
    assert example == (ROOT / "Pulumi.example.yaml").read_bytes()  # the file itself, not a link


def test_a_fresh_install_without_extras_runs_check_plan_and_audit_and_names_the_extra_render_needs(
        wheel: Path, tmp_path: Path) -> None:
    bin_ = venv(tmp_path / "venv", wheel)
    work = tmp_path / "elsewhere"
    work.mkdir()
    lockstep = bin_ / "lockstep"
    version = run(lockstep, "--version", cwd=work).stdout.strip()
    assert version == f"lockstep {wheel.name.split('-')[1]}"
    check = run(lockstep, "check", cwd=work)
    assert "Pulumi.example.yaml" in check.stdout and " 0 error" in check.stdout
    plan = run(lockstep, "plan", cwd=work)
    assert "gantt" in plan.stdout or "drain" in plan.stdout
    audit = run(lockstep, "audit", BUNDLE, cwd=work, ok=False)
    assert audit.returncode in (0, 1) and "Traceback" not in audit.stderr, audit.stderr
    render = run(lockstep, "render", "-o", tmp_path / "out", cwd=work, ok=False)
    assert render.returncode == 2
    assert render.stderr.strip().splitlines() == [
        "lockstep render: needs the 'infra' extra (module pulumi is not installed): pip install 'lockstep[infra]'"]
    assert not (tmp_path / "out").exists()
    fixer = run(lockstep, "fix", cwd=work, ok=False)
    assert fixer.returncode == 2 and fixer.stdout == ""
    assert fixer.stderr.strip().splitlines() == [
        "lockstep fix: needs the 'fix' extra (module z3 is not installed): pip install 'lockstep[fix]'"]
    audit_fix = run(lockstep, "audit", BUNDLE, "--fix", cwd=work, ok=False)
    assert audit_fix.returncode == 2 and audit_fix.stdout == ""
    assert audit_fix.stderr.strip().splitlines() == [
        "lockstep audit: needs the 'fix' extra (module z3 is not installed): pip install 'lockstep[fix]'"]
    # nothing of the checkout leaks in: none of the old top-level names is importable
    probe = run(bin_ / "python", "-c", "import importlib.util as u; print([n for n in "
                f"{OTHERS!r} if u.find_spec(n)])", cwd=work)
    assert probe.stdout.strip() == "[]"


def fake_distribution(root: Path, name: str) -> Path:
    """A distribution owning the import name `name`, as the wheel an index would serve (written
    here, not built: four isolated setuptools builds took most of this test's time)."""
    root.mkdir(parents=True)
    dist_info = f"{name}-9.9.dist-info"
    files = {f"{name}/__init__.py": f'OWNER = "the {name} distribution"\n',
             f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 9.9\n",
             f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: lockstep-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{path},,\n" for path in files) + f"{dist_info}/RECORD,,\n"
    wheel_path = root / f"{name}-9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel_path, "w") as whl:
        for path, text in {**files, f"{dist_info}/RECORD": record}.items():
            whl.writestr(path, text)
    return wheel_path


def test_installed_beside_distributions_named_timing_infra_policies_heartbeat_and_run_from_a_pulumi_project(
        wheel: Path, tmp_path: Path) -> None:
    others = [fake_distribution(tmp_path / "others" / n, n) for n in OTHERS]
    bin_ = venv(tmp_path / "venv", wheel, *others)
    project = tmp_path / "project"  # a user's Pulumi project with its own infra/ and policies/
    for folder in ("infra", "policies"):
        (project / folder).mkdir(parents=True)
        (project / folder / "__init__.py").write_text("raise ImportError('the project own folder')\n", encoding="utf-8")
    check = run(bin_ / "lockstep", "check", cwd=project)
    assert " 0 error" in check.stdout
    module = run(bin_ / "python", "-m", "lockstep", "check", cwd=project)  # cwd on sys.path
    assert module.stdout == check.stdout
    owners = run(bin_ / "python", "-c", "import timing, heartbeat; print(timing.OWNER, '/', heartbeat.OWNER)",
                 cwd=tmp_path)
    assert owners.stdout.strip() == "the timing distribution / the heartbeat distribution"
