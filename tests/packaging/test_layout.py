"""The package layout and what builds from it: lockstep/ links to each top-level folder of
the checkout (the one import name over the layout the design fixes), and the heartbeat
image copies every folder those links, and the bundled example's link, point at."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("timing", "infra", "policies", "heartbeat")


def test_lockstep_links_to_each_top_level_package_folder_and_to_nothing_else() -> None:
    links = {p.name: p for p in (ROOT / "lockstep").iterdir() if p.is_symlink()}
    assert sorted(links) == sorted(FOLDERS)
    for name, link in links.items():
        assert link.resolve() == ROOT / name and (ROOT / name / "__init__.py").is_file()
    # every other top-level package folder would be missing from the wheel
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"lockstep", "tests", "bench"}
    assert packages == set(FOLDERS)


def test_the_heartbeat_image_copies_lockstep_every_linked_folder_and_the_bundled_files() -> None:
    copies = set()
    for line in (ROOT / "heartbeat" / "Dockerfile").read_text(encoding="utf-8").splitlines():
        if line.startswith("COPY "):
            copies.update(p.rstrip("/") for p in line.split()[1:-1])
    assert {"lockstep", *FOLDERS} <= copies
    for link in (ROOT / "timing" / "bundled").iterdir():
        assert link.is_symlink() and link.resolve().is_file()
        assert str(link.resolve().relative_to(ROOT)) in copies, link
