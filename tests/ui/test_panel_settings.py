"""The panel's settings files (``ui.settings``): two panels saving the same file at once
each leave a whole file, and a reader never sees a half-written one."""

from __future__ import annotations

import threading
import tomllib
from pathlib import Path

import tomli_w

from ui.settings import UiSettings

SAVES = 300


def test_two_panels_saving_at_once_never_leave_a_broken_file(tmp_path: Path) -> None:
    panels = [UiSettings(tmp_path), UiSettings(tmp_path)]
    for i, panel in enumerate(panels):
        panel.panel.recent_faces = [f"/photos/panel-{i}/face-{n}.jpg" for n in range(12)]
        panel.panel.geometry = [i, i, 1280, 720]
    written = {tomli_w.dumps(p.panel.to_dict()) for p in panels}
    path = panels[0].panel_path
    start = threading.Barrier(3)
    saving = [True, True]
    errors: list[BaseException] = []
    seen: list[str] = []

    def save(i: int) -> None:
        start.wait()
        try:
            for _ in range(SAVES):
                panels[i].save_panel()
        except BaseException as e:
            errors.append(e)
        finally:
            saving[i] = False

    def read() -> None:
        start.wait()
        while any(saving):
            if path.exists():
                seen.append(path.read_text(encoding="utf-8"))

    threads = [threading.Thread(target=save, args=(i,)) for i in range(2)]
    threads.append(threading.Thread(target=read))
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert seen, "the reader saw the file while it was being saved"
    assert set(seen) <= written, "every read is one panel's whole file"
    assert path.read_text(encoding="utf-8") in written
    assert [p.name for p in tmp_path.iterdir()] == ["panel.toml"], "no temporary file left"
    state = UiSettings(tmp_path).panel  # a third panel starts with one of the two states
    assert tomli_w.dumps(state.to_dict()) in written
    assert tomllib.loads(path.read_text(encoding="utf-8"))["geometry"][2:] == [1280, 720]
