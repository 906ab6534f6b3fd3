"""Output folders that never lose a user's files.

A command that writes several files into a folder (``metacog analyze --out``, ``metacog demo``)
opens it as an :class:`OutputFolder`. The folder keeps a manifest, :data:`MANIFEST_NAME`, of the
files each writer put there and their SHA-256 digests. The rules:

* a folder that does not exist or is empty is created and used;
* a non-empty folder without a manifest holds someone else's files: it is refused, unless
  ``overwrite=True`` (``--overwrite``), which lets the writer replace files of the names it
  writes and nothing else;
* in a folder with a manifest, a writer replaces and removes only the files it listed there
  itself and that still hold what it wrote; a file of the same name that the user made or
  edited is refused (or, with ``overwrite``, replaced but never removed).

Files that no writer listed are never removed. The manifest is rewritten before the outputs
(their names marked pending) and after them (with their digests), so a run stopped halfway
leaves a folder the next run still recognises as its own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from metacog_metrics._io import atomic_write_text

__all__ = ["MANIFEST_NAME", "OutputFolder", "OutputFolderError"]

#: The manifest's file name, in the output folder.
MANIFEST_NAME = ".metacog-manifest.json"
_FORMAT = "metacog-eval output manifest"
_VERSION = 1


class OutputFolderError(ValueError):
    """The output folder holds files this tool did not write and would have to replace."""


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_manifest(path: Path) -> dict[str, dict[str, str | None]] | None:
    """Writer -> {relative path: digest or None (pending)}; None when absent or not ours."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    outputs = data.get("outputs")
    if not isinstance(outputs, dict):
        return None
    return {
        str(writer): {str(k): (v if isinstance(v, str) else None) for k, v in files.items()}
        for writer, files in outputs.items()
        if isinstance(files, dict)
    }


@dataclasses.dataclass
class OutputFolder:
    """One writer's view of an output folder (see the module docstring for the rules).

    Args:
        path: The folder (created when absent).
        writer: Who writes (``analyze``, ``demo``): each writer removes only its own files.
        overwrite: Replace files of the names this writer writes even where this tool did not
            write them (they are still never removed).

    Raises:
        OutputFolderError: ``path`` is a file, or a non-empty folder without a manifest and
            ``overwrite`` is false.
    """

    path: Path
    writer: str
    overwrite: bool = False
    _manifest: dict[str, dict[str, str | None]] = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.path.exists() and not self.path.is_dir():
            raise OutputFolderError(f"{self.path} is a file, not a folder")
        manifest = _read_manifest(self.path / MANIFEST_NAME)
        if manifest is None and not self.overwrite and self._has_entries():
            raise OutputFolderError(
                f"{self.path} is not empty and metacog did not write it; name a new or empty "
                "folder, or pass --overwrite to replace the files of metacog's names there "
                "(no other file is touched)"
            )
        self._manifest = manifest or {}

    def _has_entries(self) -> bool:
        return self.path.is_dir() and any(self.path.iterdir())

    @property
    def own(self) -> dict[str, str | None]:
        """This writer's files as the manifest lists them: relative path -> digest."""
        return dict(self._manifest.get(self.writer, {}))

    def _written_by_us(self, rel: str) -> bool:
        """Whether the file at ``rel`` is one a writer listed and that still holds its output."""
        path = self.path / rel
        for files in self._manifest.values():
            if rel in files:
                digest = files[rel]
                return digest is None or (path.is_file() and _digest(path) == digest)
        return False

    def claim(self, names: Iterable[str]) -> list[Path]:
        """Check that the files ``names`` (relative paths) may be written, before any is.

        Returns:
            Their paths.

        Raises:
            OutputFolderError: One of them exists and is not this tool's output (names them).
        """
        rels = [Path(n).as_posix() for n in names]
        self._reload()
        if not self.overwrite:
            foreign = [r for r in rels if (self.path / r).exists() and not self._written_by_us(r)]
            if foreign:
                shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
                raise OutputFolderError(
                    f"{self.path}: metacog did not write {shown} (or it was changed since); "
                    "move it away or pass --overwrite to replace it"
                )
        self._mark_pending(rels)
        return [self.path / r for r in rels]

    def adopt(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        """List files this run wrote where no file was (a harness's logs in a folder that was
        checked empty) as this writer's, before :meth:`commit`, so an interrupted run's files
        are still its own to the next run."""
        self._mark_pending([self._relative(p) for p in paths])

    def _relative(self, p: str | os.PathLike[str]) -> str:
        """A file's name in the folder: a path inside it (absolute or from the working
        directory), else a name relative to the folder."""
        path = Path(p)
        try:
            return path.resolve().relative_to(self.path.resolve()).as_posix()
        except ValueError:
            if path.is_absolute():
                raise OutputFolderError(f"{path} is not in the output folder {self.path}") from None
            return path.as_posix()

    def _mark_pending(self, rels: list[str]) -> None:
        self._save({**self.own, **dict.fromkeys(rels)})

    def commit(self, written: Iterable[str | os.PathLike[str]]) -> list[Path]:
        """Record this run's outputs and remove this writer's earlier outputs it did not rewrite.

        Args:
            written: The files this run wrote: paths inside the folder (absolute or from the
                working directory), or names relative to it; one that is not there is left
                out.

        Returns:
            The stale files removed. A stale file the user changed since is kept (and dropped
            from the manifest).
        """
        self._reload()
        now: dict[str, str | None] = {}
        for p in written:
            rel = self._relative(p)
            if (self.path / rel).is_file():
                now[rel] = _digest(self.path / rel)
        removed = []
        for rel, digest in self.own.items():
            if rel in now:
                continue
            path = self.path / rel
            if path.is_file() and (digest is None or _digest(path) == digest):
                path.unlink()
                removed.append(path)
        self._save(now)
        return removed

    def _reload(self) -> None:
        """The manifest as on disk: other writers (an analysis inside the demo) update it too."""
        self._manifest = _read_manifest(self.path / MANIFEST_NAME) or {}

    def _save(self, files: dict[str, str | None]) -> None:
        """Replace this writer's part of the manifest (the others' as on disk)."""
        self._reload()
        self._manifest[self.writer] = dict(files)
        data = {
            "format": _FORMAT,
            "version": _VERSION,
            "note": "files metacog wrote here; it replaces or removes only these",
            "outputs": {w: dict(sorted(f.items())) for w, f in sorted(self._manifest.items())},
        }
        atomic_write_text(self.path / MANIFEST_NAME, json.dumps(data, indent=1) + "\n")
