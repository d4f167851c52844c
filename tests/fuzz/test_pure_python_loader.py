"""Without libyaml (a PyYAML built from source without it), `timing.inputs` reads with PyYAML's
pure-Python loader: the same values, lines and one-line refusals as with the C loader.

Each case runs the CLI twice in a fresh interpreter, once as installed and once with
`yaml.CSafeLoader` removed before `timing` is imported, and compares exit code, stdout and
stderr (the parsers word a syntax error differently, e.g. "did not find expected ','" and
"expected ',', but got '}'": the words after `malformed YAML` are not compared, its file and
line are)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from tests.fuzz.support import EXAMPLE_TEXT, ROOT, with_margin

PROGRAM = """
import sys, yaml
if sys.argv[1] == "pure":
    del yaml.CSafeLoader  # as on a PyYAML without libyaml
from lockstep.timing import inputs
assert inputs.BASE is (yaml.SafeLoader if sys.argv[1] == "pure" else yaml.CSafeLoader), inputs.BASE
from lockstep.timing.cli import main
sys.exit(main(sys.argv[2:]))
"""

pytestmark = pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"),
                                reason="PyYAML without libyaml: every other test already runs the pure loader")


def run(which: str, argv: list[str]) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-c", PROGRAM, which, *argv], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    return done.returncode, done.stdout, re.sub(r"(: malformed YAML)(: .*)?$", r"\1", done.stderr, flags=re.M)


STACKS = {
    "example": EXAMPLE_TEXT,
    "duplicate key": EXAMPLE_TEXT.replace("  lockstep:margin_s: 5\n", "  lockstep:margin_s: 5\n  lockstep:margin_s: 6\n"),
    "bad int": with_margin("!!int ²"),
    "deep": with_margin("[" * 200 + "]" * 200),
    "octal and merge": with_margin("012") + "\nx: &a {k: 1}\ny: {<<: *a, k: 2}\n",
    "malformed": with_margin("[1, 2"),
}


@pytest.mark.parametrize("name", sorted(STACKS))
def test_check_reads_the_same_with_and_without_libyaml(tmp_path, name):
    path = tmp_path / "Pulumi.case.yaml"
    path.write_text(STACKS[name], encoding="utf-8")
    c, pure = run("c", ["check", "--format", "json", str(path)]), run("pure", ["check", "--format", "json", str(path)])
    assert c == pure
    assert c[0] in (0, 1, 2) and "Traceback" not in c[2]


def test_audit_reads_the_same_lines_with_and_without_libyaml():
    corpus = ROOT / "tests" / "audit" / "corpus"
    argv = ["audit", "--format", "json", "--kubernetes-version", "1.30", str(corpus)]
    c, pure = run("c", argv), run("pure", argv)
    assert c == pure
    assert c[0] in (0, 1, 2) and '"line"' in c[1]
