"""`livecam models list | fetch NAME|PRESET | verify [NAME] | path NAME`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from livecam.errors import ModelError
from livecam.models.store import ModelStore, ask_on_terminal


def preset_models(preset: str) -> list[str] | None:
    """The model names of ``preset`` (with the default settings), or None when it is not a
    preset with models."""
    from livecam.models.presets import PRESETS, preset_model_names

    return (preset_model_names(preset) or None) if preset in PRESETS else None


def add_models_command(sub: Any) -> None:
    """Register `livecam models` on the top-level subparsers (``add_subparsers()``)."""
    models = sub.add_parser(
        "models",
        help="list, download, verify and locate the ONNX models of the neural presets",
        description="Model files are looked up in $LIVECAM_MODELS_DIR, the user data folder, "
        "then models/ in a checkout. Downloads are verified (sha256) before use.",
    )
    cmds = models.add_subparsers(dest="models_command", required=True)
    cmds.add_parser("list", help="every model: task, size, present, where, licence")
    fetch = cmds.add_parser("fetch", help="download models (a name or a preset)")
    fetch.add_argument("names", nargs="+", metavar="NAME|PRESET")
    fetch.add_argument(
        "--accept-licence",
        action="store_true",
        help="accept the licences of these models (remembered; for scripts)",
    )
    fetch.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    verify = cmds.add_parser(
        "verify",
        help="re-hash every present file and cached dynamic-batch rewrite (exit 1 if one is bad)",
    )
    verify.add_argument("names", nargs="*", metavar="NAME")
    path = cmds.add_parser("path", help="print the path of a present, verified model file")
    path.add_argument("name", metavar="NAME")
    for p in (models, *cmds.choices.values()):
        p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    models.set_defaults(func=cmd_models)


def cmd_models(args: argparse.Namespace) -> int:
    store = ModelStore()
    command = args.models_command
    if command == "list":
        print(format_table(store))
        return 0
    if command == "fetch":
        return _fetch(store, args.names, args.accept_licence, not args.quiet)
    if command == "verify":
        return _verify(store, args.names)
    store.entry(args.name)
    path, bad = store.find(args.name)
    if path is None:
        raise store.missing_error(
            [(store.entry(args.name), f" ({bad[0]})" if bad else "")], tried=False
        )
    print(path)
    return 0


def _expand(store: ModelStore, names: Sequence[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        if name in store.manifest:
            out.append(name)
            continue
        models = preset_models(name)
        if models is None:
            from livecam.models.presets import PRESETS

            presets = ", ".join(n for n in PRESETS if preset_models(n))
            raise ModelError(
                f"{name!r} is neither a model nor a preset with models",
                f"models: {', '.join(store.manifest)}; presets: {presets}",
            )
        out.extend(models)
    return list(dict.fromkeys(out))


def _fetch(store: ModelStore, names: Sequence[str], accept: bool, progress: bool) -> int:
    wanted = _expand(store, names)
    paths = store.require(
        wanted, download=True, accept_licence=accept, progress=progress, ask=ask_on_terminal
    )
    for name in wanted:
        entry = store.entry(name)
        sha = entry.sha256 or store.recorded_hash(name)
        note = "" if entry.sha256 else " (recorded at first download, not published)"
        print(f"{name}: {paths[name]} sha256 {sha}{note}")
    return 0


def _verify(store: ModelStore, names: Sequence[str]) -> int:
    wanted = [store.entry(n).name for n in names] or _folder_models(store)
    bad = 0
    for name in wanted:
        for found in store.candidates(name):
            why = store.problem(name, found.path)
            if why is None:
                print(f"ok   {name}: {found.path}")
            else:
                bad += 1
                print(f"BAD  {name}: {found.path}: {why}")
        if names and not store.candidates(name):
            print(f"--   {name}: not present")
    if bad:
        print(f"{bad} bad file(s): delete them and run `livecam models fetch NAME`")
    cached = _verify_cache(store, wanted if names else None)
    if cached:
        print(f"{cached} bad cached rewrite(s): LiveCam rebuilds them at the next load")
    return 1 if bad or cached else 0


def _verify_cache(store: ModelStore, names: Sequence[str] | None) -> int:
    """Check the cached dynamic-batch rewrites (of ``names``' files; None: all) against
    their integrity records; print one line each and return how many are bad."""
    from livecam.runtime.batch_rewrite import check_cache
    from livecam.runtime.sessions import RuntimeOptions

    stems = None if names is None else {Path(store.entry(n).file).stem for n in names}
    bad = 0
    for rewrite, why in check_cache(RuntimeOptions().cache_root / "onnx"):
        if stems is not None and rewrite.name.split(".")[0] not in stems:
            continue
        if why is None:
            print(f"ok   cached rewrite: {rewrite}")
        else:
            bad += 1
            print(f"BAD  cached rewrite: {rewrite} {why}")
    return bad


def _folder_models(store: ModelStore) -> list[str]:
    """The models whose files live in the model folders (every model of the manifest)."""
    return list(store.manifest)


def format_table(store: ModelStore) -> str:
    """One row per model: name, task, size, present, where, licence, commercial, hash."""
    rows = [("name", "task", "size", "present", "where", "commercial", "sha256", "licence")]
    links: list[str] = []  # model files that are links: where they really point
    for name in _folder_models(store):
        entry = store.entry(name)
        found = store.candidates(name)
        path = store.locate(name)
        where = next((f.where for f in found if f.path == path), "-")
        size = f"{entry.size / 1e6:.1f} MB" if entry.size else "?"
        hash_state = (
            "known" if entry.sha256 else ("recorded" if store.recorded_hash(name) else "unknown")
        )
        shown = path or (found[0].path if found else None)
        if shown is not None and shown.is_symlink():
            links.append(f"{name}: {shown} is a symbolic link to {os.readlink(shown)}")
        rows.append(
            (
                name,
                entry.task,
                size,
                ("link" if shown is not None and shown.is_symlink() else "yes")
                if path
                else ("bad" if found else "no"),
                where,
                "yes" if entry.commercial else "no",
                hash_state,
                entry.licence.split(" (")[0],
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
    folders = ", ".join(f"{w}={p}" for w, p in store.folders)
    problem = store.env_problem()
    warnings = [f"WARNING: {problem.message} (fix: {problem.hint})"] if problem else []
    downloads = f"downloads go to {store.download_dir}"
    if problem:  # they would fail there: the warning says why and how to fix it
        downloads = f"downloads cannot go to {store.download_dir} (see the warning)"
    return "\n".join([*lines, *links, f"folders: {folders}", downloads, *warnings])
