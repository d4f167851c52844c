"""kustomize trees: said, never judged raw.

A directory holding a `kustomization.yaml` (or any document of kind `Kustomization`) is the
input of `kubectl kustomize`, not what reaches the cluster: labels come from `labels` /
`commonLabels`, replicas and probes from patches, names from prefixes. Judged file by file it
gives false findings (a PDB selecting no pods, a patch taken for a workload), so every
document under such a directory is set aside and the user is told what to audit instead.
"""

from __future__ import annotations

from pathlib import PurePath

from lockstep.timing.audit.reader import Doc
from lockstep.timing.inputs import STDIN_NAME

FILES = ("kustomization.yaml", "kustomization.yml")


def is_kustomization(doc: Doc) -> bool:
    return doc.kind == "Kustomization" or PurePath(doc.file).name.lower() in FILES


def set_aside(docs: list[Doc]) -> tuple[list[Doc], list[str]]:
    """(the documents to audit, one problem line per kustomize directory). Standard input has
    no directory: only its Kustomization documents themselves are set aside."""
    roots: dict[str, Doc] = {}
    for doc in docs:
        if is_kustomization(doc):
            root = STDIN_NAME if doc.file == STDIN_NAME else str(PurePath(doc.file).parent)
            roots.setdefault(root, doc)
    if not roots:
        return docs, []

    def under(doc: Doc) -> bool:
        if doc.file == STDIN_NAME:
            return is_kustomization(doc)
        parents = {str(p) for p in PurePath(doc.file).parents}
        return any(root in parents for root in roots if root != STDIN_NAME)

    problems = []
    for root, doc in roots.items():
        target = "DIR" if root == STDIN_NAME else root
        problems.append(f"{doc.where}: a kustomization: audit what it builds, `kubectl kustomize {target} | "
                        "lockstep audit -` (its bases and patches are not what reaches the cluster: not judged raw)")
    return [d for d in docs if not under(d)], problems
