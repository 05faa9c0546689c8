"""Where model files are, whether they are the right bytes, and getting the missing ones.

Lookup order: ``$LIVECAM_MODELS_DIR``, the user data folder (platformdirs, ``models/``),
the checkout's ``models/``, then the files bundled with LiveCam (the YuNet detector).
Downloads go to ``$LIVECAM_MODELS_DIR`` when set, else the user data folder. A file is
used only after its sha256 matched the manifest; where the manifest knows no hash, the
first file seen is checked structurally and its hash recorded in ``known_hashes.json``
(data folder), and later files must match that record. Licences that forbid commercial
use are accepted once per model (``accepted_licences.json``).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from livecam.errors import ModelError
from livecam.models.download import DownloadFailed, Progress, download, part_path
from livecam.models.manifest import (
    CHECKOUT_MODELS,
    FileHashes,
    ModelEntry,
    contract_problems,
    load_manifest,
)
from livecam.userfiles import write_atomically

log = logging.getLogger(__name__)

ENV_DIR = "LIVECAM_MODELS_DIR"
KNOWN_HASHES = "known_hashes.json"
ACCEPTED = "accepted_licences.json"


@dataclass(frozen=True)
class Found:
    """A model file on disk and the lookup folder it is in (``env``, ``data``,
    ``checkout`` or ``bundled``)."""

    path: Path
    where: str


def _bundled_dir() -> Path:
    import livecam.assets  # the top-level assets/ folder, packaged as livecam.assets

    return Path(livecam.assets.__file__).parent


class ModelStore:
    """The model folders of this machine and the manifest that says what belongs in them.

    ``models_dir`` defaults to ``$LIVECAM_MODELS_DIR`` (unset: none), ``data_dir`` to
    platformdirs' user data folder for ``livecam``.
    """

    def __init__(
        self,
        manifest: Mapping[str, ModelEntry] | None = None,
        *,
        models_dir: str | os.PathLike[str] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.manifest = load_manifest() if manifest is None else manifest
        env = os.environ.get(ENV_DIR) if models_dir is None else os.fspath(models_dir)
        self.data_dir = Path(data_dir or platformdirs.user_data_dir("livecam"))
        folders = [("data", self.data_dir / "models")]
        if env:
            folders.insert(0, ("env", Path(env).expanduser()))
        if CHECKOUT_MODELS is not None and CHECKOUT_MODELS.is_dir():
            folders.append(("checkout", CHECKOUT_MODELS))
        folders.append(("bundled", _bundled_dir()))
        self.folders: tuple[tuple[str, Path], ...] = tuple(folders)
        self.download_dir = folders[0][1]
        self.hashes = FileHashes()

    def env_problem(self) -> ModelError | None:
        """Why ``$LIVECAM_MODELS_DIR`` cannot be the models folder (a file, a device, a
        folder that cannot be written into), or None (unset or usable; a missing folder
        is made by the first download)."""
        where, folder = self.folders[0]
        if where != "env":
            return None
        if folder.exists() and not folder.is_dir():
            why = "is not a folder"
        elif folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            why = "is a folder LiveCam cannot write into"
        else:
            return None
        return ModelError(
            f"{ENV_DIR}={folder} {why}",
            f"set {ENV_DIR} to a writable folder for model files, or unset it (then "
            f"{self.data_dir / 'models'} is used)",
        )

    # ------------------------------------------------------------------ lookup

    def entry(self, name: str) -> ModelEntry:
        """The manifest entry ``name``; ModelError listing the known names otherwise."""
        if name not in self.manifest:
            raise ModelError(f"unknown model {name!r}", f"known models: {', '.join(self.manifest)}")
        return self.manifest[name]

    def candidates(self, name: str) -> list[Found]:
        """Every file of model ``name`` in the lookup folders, in lookup order."""
        entry = self.entry(name)
        return [
            Found(folder / entry.file, where)
            for where, folder in self.folders
            if (folder / entry.file).is_file()
        ]

    def locate(self, name: str) -> Path | None:
        """The first file of ``name`` whose size is right (cheap: not hashed; ``require``
        verifies the content), or None."""
        for found in self.candidates(name):
            if self._size_problem(self.entry(name), found.path) is None:
                return found.path
        return None

    def problem(self, name: str, path: Path) -> str | None:
        """Why the file at ``path`` is not model ``name`` (None: it is). An unknown hash
        is recorded here after the structural check passed."""
        entry = self.entry(name)
        size_problem = self._size_problem(entry, path)
        if size_problem:
            return size_problem
        digest = self.hashes.sha256(path)
        expected = entry.sha256 or self.recorded_hash(name)
        if expected:
            if digest != expected:
                source = "the manifest" if entry.sha256 else f"{KNOWN_HASHES}"
                return f"sha256 {digest}, expected {expected} (from {source})"
            return None
        found = contract_problems(path, entry)
        if found:
            return "; ".join(found)
        self.record_hash(entry, digest, path.stat().st_size, f"file {path}")
        return None

    def _size_problem(self, entry: ModelEntry, path: Path) -> str | None:
        size = path.stat().st_size
        if entry.size and size != entry.size:
            return f"{size} bytes, expected {entry.size} (truncated or corrupt)"
        return None

    def find(self, name: str) -> tuple[Path | None, list[str]]:
        """The first verified file of ``name`` and, for each bad file passed over, why."""
        bad: list[str] = []
        for found in self.candidates(name):
            why = self.problem(name, found.path)
            if why is None:
                return found.path, bad
            log.warning("%s is not a good copy of %s: %s", found.path, name, why)
            bad.append(f"{found.path}: {why}")
        return None, bad

    # ------------------------------------------------------------------ records

    def _read(self, file: str) -> dict[str, Any]:
        path = self.data_dir / file
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            log.warning("ignoring %s: %s", path, e)
            return {}
        except RecursionError:  # nested deeper than any record of ours: damaged
            log.warning("ignoring %s: it is damaged (nested too deeply)", path)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, file: str, data: dict[str, Any]) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        write_atomically(self.data_dir / file, text.encode(), overwrite=True)

    def recorded_hash(self, name: str) -> str:
        """The sha256 recorded for ``name`` at its first download ("" when none)."""
        record = self._read(KNOWN_HASHES).get(name)
        return str(record.get("sha256", "")) if isinstance(record, dict) else ""

    def record_hash(self, entry: ModelEntry, sha256: str, size: int, source: str) -> None:
        """Remember the hash of ``entry``'s first good file (no hash was published)."""
        data = self._read(KNOWN_HASHES)
        data[entry.name] = {
            "file": entry.file,
            "sha256": sha256,
            "size": size,
            "source": source,
            "recorded": _now(),
        }
        self._write(KNOWN_HASHES, data)
        log.warning(
            "%s: no published sha256; the file passed the structural check and its hash is "
            "now recorded in %s: sha256 %s, %d bytes",
            entry.name,
            self.data_dir / KNOWN_HASHES,
            sha256,
            size,
        )

    def licence_accepted(self, entry: ModelEntry) -> bool:
        """Whether ``entry`` may be used: a commercial-use licence, or one accepted."""
        if not entry.needs_acceptance:
            return True
        record = self._read(ACCEPTED).get(entry.name)
        return isinstance(record, dict) and record.get("licence") == entry.licence

    def accept_licences(self, entries: Iterable[ModelEntry]) -> None:
        """Remember that the user accepted the licences of ``entries``."""
        data = self._read(ACCEPTED)
        for entry in entries:
            data[entry.name] = {"licence": entry.licence, "accepted": _now()}
        self._write(ACCEPTED, data)

    def check_licences(
        self,
        entries: Iterable[ModelEntry],
        *,
        accept: bool,
        ask: Callable[[ModelEntry], bool] | None = None,
    ) -> None:
        """Make sure every licence in ``entries`` was accepted: ``accept`` accepts them,
        else ``ask(entry)`` (an interactive prompt) may; else one ModelError names each
        licence and the flag."""
        pending = [e for e in entries if not self.licence_accepted(e)]
        if pending and accept:
            for entry in pending:
                log.warning("%s: licence accepted: %s", entry.name, entry.licence)
            self.accept_licences(pending)
            return
        if pending and ask is not None:
            agreed = [e for e in pending if ask(e)]
            self.accept_licences(agreed)
            pending = [e for e in pending if e not in agreed]
        if pending:
            listed = "; ".join(f"{e.name}: {e.licence}" for e in pending)
            raise ModelError(
                f"licence not accepted for {listed}",
                "read it and pass --accept-licence (e.g. `livecam models fetch "
                f"{pending[0].name} --accept-licence`); it is remembered for each model",
            )

    # ------------------------------------------------------------------ getting files

    def require(
        self,
        names: Iterable[str],
        *,
        download: bool,
        accept_licence: bool,
        progress: bool = True,
        ask: Callable[[ModelEntry], bool] | None = None,
        replace_bad: bool = True,
    ) -> dict[str, Path]:
        """A verified file for each model in ``names``, downloading the missing or bad
        ones when ``download``. Every problem is collected into one ModelError that names
        each missing file, its URL(s) and the folder to put it in. Without
        ``replace_bad`` (a run starting or changing its preset) a corrupt file is not
        downloaded again: a ModelError says it is corrupt and how to get a good copy."""
        entries = [self.entry(n) for n in dict.fromkeys(names)]
        self.check_licences(entries, accept=accept_licence, ask=ask)
        found: dict[str, Path] = {}
        missing: list[tuple[ModelEntry, str]] = []
        for entry in entries:
            path, bad = self.find(entry.name)
            if path is not None:
                found[entry.name] = path
            else:
                missing.append((entry, f" (bad copy: {bad[0]})" if bad else ""))
        problem = self.env_problem()
        if missing and problem is not None:  # the folder to look in or download to is bad
            raise problem
        if problem is not None:
            log.warning("%s: ignored, every model was found elsewhere", problem.message)
        corrupt = [(e, why) for e, why in missing if why]
        if corrupt and not replace_bad:
            names = " ".join(e.name for e, _ in corrupt)
            raise ModelError(
                f"{len(corrupt)} model file(s) corrupt: "
                + "; ".join(f"{e.file} ({e.name}){why}" for e, why in corrupt),
                f"`livecam models verify` checks every model file; `livecam models fetch "
                f"{names}` downloads a good copy",
            )
        if missing and download:
            failed = []
            for entry, _ in missing:
                try:
                    found[entry.name] = self.fetch(entry, progress=progress)
                except ModelError as e:
                    failed.append((entry, f" ({e.message})"))
            missing = failed
        if missing:
            raise self.missing_error(missing, tried=download)
        return found

    def fetch(
        self, entry: ModelEntry, *, progress: bool = True, on_progress: Progress | None = None
    ) -> Path:
        """Download ``entry`` into the download folder (verified) and return its path;
        ``on_progress(bytes, total)`` is called per chunk (it may raise ``Cancelled``)."""
        if not entry.urls:
            raise ModelError(f"{entry.name} has no download URL")
        problem = self.env_problem()
        if problem is not None:
            raise problem
        target = self.download_dir / entry.file

        def check(part: Path) -> None:
            problems = contract_problems(part, entry)
            if problems:
                raise ModelError("; ".join(problems))

        try:
            got = download(
                entry.urls,
                target,
                sha256=entry.sha256 or self.recorded_hash(entry.name),
                size=entry.size,
                check=check,
                progress=progress,
                on_progress=on_progress,
            )
        except DownloadFailed as e:
            raise ModelError(
                f"{entry.file} ({entry.name}) could not be downloaded: {e}",
                self.by_hand_hint([entry]),
            ) from e
        except OSError as e:
            raise ModelError(f"cannot write {target}: {e.strerror or e}") from e
        if not entry.sha256 and not self.recorded_hash(entry.name):
            self.record_hash(entry, got.sha256, got.size, got.url)
        return got.path

    def missing_error(self, missing: list[tuple[ModelEntry, str]], tried: bool) -> ModelError:
        lines = [  # a failed download's reason already names each URL it tried
            f"{e.file} ({e.name}){why}"
            if tried and why
            else f"{e.file} ({e.name}){why} from {' or '.join(e.urls) or 'no known URL'}"
            for e, why in missing
        ]
        verb = "could not be downloaded" if tried else "missing"
        names = " ".join(e.name for e, _ in missing)
        then = (
            self.by_hand_hint([e for e, _ in missing], urls=False)
            if tried
            else f"put them in {self.download_dir}{self._other_folder()}, or run "
            f"`livecam models fetch {names}`"
        )
        return ModelError(f"{len(missing)} model file(s) {verb}: " + "; ".join(lines), then)

    def by_hand_hint(self, entries: Sequence[ModelEntry], urls: bool = True) -> str:
        """How to get ``entries`` when the download fails: the network, or the files by
        hand (from their URLs, when ``urls``) into the folder LiveCam reads them from."""
        files = ", ".join(
            f"{e.file} (from {' or '.join(e.urls) or 'no known URL'})" if urls else e.file
            for e in entries
        )
        return (
            f"check the network connection and try again; or download {files} by hand "
            f"into {self.download_dir}{self._other_folder()}, then try again"
        )

    def _other_folder(self) -> str:
        return "" if self.folders[0][0] == "env" else f" (or set {ENV_DIR} to their folder)"

    def part_file(self, name: str) -> Path:
        """Where a partial download of ``name`` is kept."""
        return part_path(self.download_dir / self.entry(name).file)

    # ------------------------------------------------------------------ user files

    def user_file(self, path: str | os.PathLike[str], role: str | ModelEntry) -> Path:
        """A model file the user gave by path for ``role`` (a task, a part kind or an
        entry). A manifest file (same sha256) is used as is; any other file only after its
        inputs and outputs fit the role's contract, with a warning naming its sha256."""
        file = Path(path).expanduser()
        if not file.is_file():
            raise ModelError(f"model file {file} not found", "give the path of an .onnx file")
        digest = self.hashes.sha256(file)
        for entry in self.manifest.values():
            if entry.sha256 and entry.sha256 == digest:
                log.info("%s is the manifest's %s (sha256 matches)", file, entry.name)
                return file
        if isinstance(role, ModelEntry):
            options = [role]
        else:
            options = [e for e in self.manifest.values() if role in (e.task, e.part)]
            if not options:
                raise ModelError(
                    f"unknown model role {role!r}",
                    "use a task (detector, landmarker, recognizer, swapper, enhancer, masker)",
                )
        reasons = []
        for entry in options:
            problems = contract_problems(file, entry)
            if not problems:
                log.warning(
                    "%s is not a file LiveCam knows (sha256 %s): using it as %s after its "
                    "inputs and outputs matched that contract",
                    file,
                    digest,
                    entry.name,
                )
                return file
            reasons.append(f"as {entry.name}: {'; '.join(problems)}")
        raise ModelError(
            f"{file} does not fit the {role if isinstance(role, str) else role.name} "
            f"contract: {' | '.join(reasons)}",
            "give a model with the inputs and outputs listed in models/manifest.toml",
        )


def ask_on_terminal(entry: ModelEntry) -> bool:
    """Show ``entry``'s licence on stderr and ask for a yes (interactive runs only)."""
    if not sys.stdin.isatty():
        return False
    print(
        f"{entry.name} ({entry.file}) is licensed: {entry.licence}\n  {entry.licence_url}",
        file=sys.stderr,
    )
    answer = input("Accept this licence? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
