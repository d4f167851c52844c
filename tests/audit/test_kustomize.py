"""kustomize inputs are set aside whole, each kustomization named once with what to audit."""

from __future__ import annotations

from lockstep.timing.audit.kustomize import set_aside
from lockstep.timing.audit.reader import Doc
from lockstep.timing.inputs import STDIN_NAME


def doc(file: str, kind: str = "Deployment") -> Doc:
    return Doc(file, 0, {"kind": kind, "metadata": {"name": "x"}})


def test_every_document_under_a_kustomization_directory_is_set_aside_and_others_kept():
    docs = [doc("k/base/kustomization.yaml", "Kustomization"), doc("k/base/deploy.yaml"),
            doc("k/base/sub/patch.yaml"), doc("k/other.yaml"), doc("elsewhere/app.yaml")]
    kept, problems = set_aside(docs)
    assert [d.file for d in kept] == ["k/other.yaml", "elsewhere/app.yaml"]
    assert problems == ["k/base/kustomization.yaml:1: a kustomization: audit what it builds, `kubectl kustomize "
                        "k/base | lockstep audit -` (its bases and patches are not what reaches the cluster: not "
                        "judged raw)"]


def test_a_kustomization_file_without_a_kind_is_recognised_by_its_name():
    kept, problems = set_aside([doc("o/prod/Kustomization.yml", ""), doc("o/prod/replicas.yaml")])
    assert kept == [] and len(problems) == 1 and "`kubectl kustomize o/prod |" in problems[0]


def test_on_standard_input_only_the_kustomization_itself_is_set_aside():
    docs = [doc(STDIN_NAME, "Kustomization"), doc(STDIN_NAME)]
    kept, problems = set_aside(docs)
    assert [d.kind for d in kept] == ["Deployment"]
    assert "`kubectl kustomize DIR |" in problems[0]


def test_without_a_kustomization_nothing_changes():
    docs = [doc("a.yaml"), doc("b/c.yaml")]
    assert set_aside(docs) == (docs, [])
