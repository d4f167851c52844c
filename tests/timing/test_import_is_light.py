"""`timing` is the pure core: importing it (and the rules, and config loading) must not pull
in pulumi — checked in a fresh interpreter, where nothing else has imported it yet."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
import {module}
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_aws', 'pulumi_kubernetes',
                                                            'boto3', 'botocore', 'kubernetes', 'pika'))
print(json.dumps(heavy))
"""


@pytest.mark.parametrize("module", ["lockstep", "lockstep.timing", "lockstep.timing.invariants", "lockstep.timing.config", "lockstep.timing.cli",
                                    "lockstep.timing.cmd_check"])
def test_importing_the_core_pulls_in_no_pulumi_or_cloud_client(module) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_the_probe_would_see_pulumi_if_it_were_imported() -> None:
    # guards the check above against passing vacuously (e.g. a module-name typo)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(module="pulumi")], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "pulumi" in json.loads(proc.stdout)
