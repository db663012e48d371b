"""The prompt: a multi-line TextArea with history, slash-command and ``@path`` completion.

Keys: ``enter`` sends, ``shift+enter`` / ``ctrl+j`` insert a newline, ``up``/``down`` on the
first/last line walk the history; while the completion menu is open ``up``/``down`` move in it,
``tab``/``enter`` accept and ``escape`` closes it.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from textual import events, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from .file_finder import FileIndex, Match
from .ordered_keys import KeysInOrder

Location = tuple[int, int]

MAX_PATH_COMPLETIONS = 50
MAX_HISTORY = 500
_AT_WORD = re.compile(r"(?:^|\s)@([^\s@]*)$")


@dataclass(frozen=True, slots=True)
class Completion:
    """One entry of the completion menu and the edit it makes when accepted."""

    label: Content
    replacement: str
    start: Location
    end: Location
    submit: bool = False  # accepting with enter also sends (commands without arguments)
    reopen: bool = False  # keep completing after accepting (a directory)


class CommandHint(Protocol):
    """A slash command as the completion menu shows it."""

    @property
    def name(self) -> str: ...  # without the slash
    @property
    def args(self) -> str: ...  # argument hint, "" when the command takes none
    @property
    def help(self) -> str: ...


class PromptCompleter(Protocol):
    """What the prompt completes besides file names; the app hands one in."""

    def commands(self, typed: str) -> Sequence[CommandHint]:
        """Commands matching ``typed`` (the text after ``/``), best first."""
        ...

    def arguments(self, command: str, partial: str) -> Sequence[tuple[str, str] | tuple[str, str, bool]]:
        """``(value, help[, reopen])`` completing the first argument ``partial`` of ``/command``
        (reopen: keep completing after it instead of sending)."""
        ...

    async def later_arguments(self, command: str, argument: str) -> list[tuple[str, str, bool]]:
        """``(word, help, reopen)`` completing the last word of ``argument`` (which has several
        words: an MCP prompt's ``name=value`` arguments, asked of the server)."""
        ...


def list_path_completions(cwd: Path, fragment: str, limit: int = MAX_PATH_COMPLETIONS) -> list[str]:
    """File names under ``cwd`` completing ``fragment`` (``src/ma`` -> ``src/main.py``); dirs end in /."""
    directory, _, base = fragment.rpartition("/")
    root = (
        Path(os.path.expanduser(directory or ".")) if directory.startswith("~") else cwd / (directory or ".")
    )
    prefix = f"{directory}/" if directory else ""
    show_hidden = base.startswith(".")
    found: list[tuple[bool, str]] = []
    try:
        with os.scandir(root) as entries:
            for count, entry in enumerate(entries):
                if count > 5000:
                    break
                name = entry.name
                if not show_hidden and name.startswith("."):
                    continue
                if not name.lower().startswith(base.lower()):
                    continue
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                found.append((not is_dir, name + ("/" if is_dir else "")))
    except OSError:
        return []
    found.sort(key=lambda pair: (pair[0], pair[1].lower()))
    return [prefix + name for _, name in found[:limit]]


def browses_directory(fragment: str) -> bool:
    """``@``, ``@src/``, ``@~/x``, ``@/etc/``, ``@.e``: names in a directory (else: fuzzy search)."""
    return not fragment or fragment.endswith("/") or fragment.startswith(("~", "/", "."))


def mention_text(path: str) -> str:
    """A path as an ``@`` mention: quoted when it holds a space."""
    return f'"{path}"' if " " in path else path


def highlight_match(match: Match) -> Content:
    """The path with the typed characters in bold accent (as fuzzy finders show why it matched)."""
    parts: list[tuple[str, str] | str] = []
    previous = 0
    for position in match.positions:
        if position > previous:
            parts.append(match.path[previous:position])
        parts.append((match.path[position], "bold $text-accent"))
        previous = position + 1
    parts.append(match.path[previous:])
    return Content.assemble(*parts)


MENU_MAX_ROWS = 10
"""#completion-menu's max-height in styles/main.tcss, border included."""
MENU_MIN_ROWS = 3
"""A border and one entry."""


class CompletionMenu(OptionList, can_focus=False):
    """The pop-up list above the prompt; never takes focus (the prompt drives it)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.completions: list[Completion] = []
        self.display = False
        self.typed: tuple[int, str] | None = None
        """(row, text before the cursor) the shown completions were made for."""

    def show(self, completions: list[Completion], typed: tuple[int, str] | None = None) -> None:
        self.completions = completions
        self.typed = typed
        self.set_options(Option(c.label) for c in completions)
        if completions:
            self._fit_above_prompt()
        self.display = bool(completions)
        if completions:
            self.highlighted = 0

    def _fit_above_prompt(self) -> None:
        """Shrink to the room the prompt area's max-height leaves above the prompt: in a short terminal
        a full-height menu would push the prompt's typed line out of view."""
        area = self.parent
        if not isinstance(area, PromptArea) or area.parent is None:
            return
        cap = area.styles.max_height
        if cap is None:
            return
        room = int(cap.resolve(area.parent.size, self.app.size)) - area.input.outer_size.height
        self.styles.max_height = max(MENU_MIN_ROWS, room) if room < MENU_MAX_ROWS else None

    def hide(self) -> None:
        self.completions = []
        self.typed = None
        self.clear_options()
        self.display = False

    @property
    def is_open(self) -> bool:
        return self.display and bool(self.completions)

    @property
    def current(self) -> Completion | None:
        index = self.highlighted
        if index is None or not (0 <= index < len(self.completions)):
            return None
        return self.completions[index]


class PromptInput(KeysInOrder, TextArea):
    """Multi-line input. Posts :class:`PromptInput.Submitted` with the text on ``enter``."""

    class Submitted(Message):
        def __init__(self, prompt: PromptInput, text: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.text = text

        @property
        def control(self) -> PromptInput:
            return self.prompt

    class FollowChat(Message):
        """End at the end of the prompt's text: the chat goes back to its end and follows it."""

    def __init__(
        self,
        menu: CompletionMenu,
        *,
        cwd: Path | None = None,
        completer: PromptCompleter | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder="Ask anything · / for commands · @ for files",
            compact=True,
        )
        self.menu = menu
        self.cwd = cwd or Path.cwd()
        self.completer = completer
        self.prompt_history: list[str] = []
        self._history_index = 0
        self._draft = ""
        self._quiet_text: str | None = None  # text loaded by history: don't pop completions
        self._file_index: FileIndex | None = None

    # --- history ----------------------------------------------------------------------------

    def add_history(self, text: str) -> None:
        if text.strip() and (not self.prompt_history or self.prompt_history[-1] != text):
            self.prompt_history.append(text)
            del self.prompt_history[:-MAX_HISTORY]
        self._history_index = len(self.prompt_history)
        self._draft = ""

    def _load_quietly(self, text: str) -> None:
        self._quiet_text = text
        self.load_text(text)
        self.move_cursor(self.document.end)
        self.menu.hide()

    def history_previous(self) -> bool:
        if not self.prompt_history or self._history_index == 0:
            return False
        if self._history_index == len(self.prompt_history):
            self._draft = self.text
        self._history_index -= 1
        self._load_quietly(self.prompt_history[self._history_index])
        return True

    def history_next(self) -> bool:
        if self._history_index >= len(self.prompt_history):
            return False
        self._history_index += 1
        text = (
            self._draft
            if self._history_index == len(self.prompt_history)
            else self.prompt_history[self._history_index]
        )
        self._load_quietly(text)
        return True

    # --- keys -------------------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if self.menu.is_open and key in ("tab", "enter") and self.menu.typed != self._typed():
            # Typed faster than the menu followed (its Changed events are still queued): never
            # apply completions made for other text; make them again for what is there now.
            self._update_completions()
            if self.menu.typed != self._typed():  # file names come later, from a worker
                self.menu.hide()
        if self.menu.is_open and key in ("up", "down", "tab", "enter", "escape"):
            event.stop()
            event.prevent_default()
            if key == "up":
                self.menu.action_cursor_up()
            elif key == "down":
                self.menu.action_cursor_down()
            elif key == "escape":
                self.menu.hide()
            elif key == "enter" and self._completion_is_typed():
                self.menu.hide()
                self.submit()  # "/model" typed in full: enter runs it rather than completing
            else:
                self.accept_completion(submit=key == "enter")
            return
        if key == "enter":
            event.stop()
            event.prevent_default()
            self.submit()
            return
        if key in ("shift+enter", "ctrl+j"):
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self.replace("\n", start, end, maintain_selection_offset=False)
            return
        if key == "end" and self.cursor_location == self.document.end and not self.selected_text:
            # At the end of the text End follows the chat (back to its end; new output followed
            # again). Decided here, where keys are handled in the order typed: the screen's
            # priority binding read the cursor before the keys queued ahead of End had moved it
            # (Home and End typed together: End was taken as "follow the chat" and lost).
            event.stop()
            event.prevent_default()
            self.post_message(self.FollowChat())
            return
        if key in ("up", "down") and not self.selected_text:
            row, _ = self.cursor_location
            if key == "up" and row == 0 and self.history_previous():
                event.stop()
                event.prevent_default()
                return
            if key == "down" and row == self.document.line_count - 1 and self.history_next():
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)

    def submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        self.add_history(text)
        self.menu.hide()
        self.clear()
        self.post_message(self.Submitted(self, text))

    # --- completion -------------------------------------------------------------------------

    def _completion_is_typed(self) -> bool:
        completion = self.menu.current
        if completion is None:
            return False
        typed = self.document.get_text_range(completion.start, completion.end)
        return typed == completion.replacement.rstrip()

    def accept_completion(self, *, submit: bool = False) -> None:
        completion = self.menu.current
        if completion is None:
            self.menu.hide()
            return
        self.replace(
            completion.replacement, completion.start, completion.end, maintain_selection_offset=False
        )
        self.menu.hide()
        if submit and completion.submit:
            self.submit()
        elif completion.reopen:
            self._update_completions()

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        if self._quiet_text is not None and self.text == self._quiet_text:
            self._quiet_text = None
            return
        self._quiet_text = None
        self._update_completions()

    def _on_text_area_selection_changed(self, event: TextArea.SelectionChanged) -> None:
        if self.menu.is_open:
            self._update_completions()

    def _typed(self) -> tuple[int, str]:
        row, col = self.cursor_location
        return row, self.document.get_line(row)[:col]

    def _update_completions(self) -> None:
        row, col = self.cursor_location
        before = self.document.get_line(row)[:col]
        if self.completer is not None and row == 0 and before.startswith("/") and not before.startswith("//"):
            command, space, argument = before[1:].partition(" ")
            if not space:
                self.menu.show(self._slash_completions(command, col), (row, before))
                return
            if " " not in argument:
                self.menu.show(self._argument_completions(command, argument, row, col), (row, before))
                return
            self._complete_later_word(
                command, argument, (row, col - len(argument.rsplit(" ", 1)[1])), (row, col)
            )
            return
        match = _AT_WORD.search(before)
        if match is not None:
            fragment = match.group(1)
            self._complete_paths(fragment, (row, col - len(fragment)), (row, col))
            return
        self.menu.hide()

    def _slash_completions(self, typed: str, col: int) -> list[Completion]:
        assert self.completer is not None
        completions: list[Completion] = []
        for command in self.completer.commands(typed):
            label = Content.assemble(
                (f"/{command.name}", "bold"),
                (f" {command.args}" if command.args else "", "italic"),
                ("  ", ""),
                (command.help, "dim"),
            )
            replacement = f"/{command.name}" + (" " if command.args else "")
            completions.append(
                Completion(
                    label, replacement, (0, 0), (0, col), submit=not command.args, reopen=bool(command.args)
                )
            )
        return completions

    def _argument_completions(self, command: str, argument: str, row: int, col: int) -> list[Completion]:
        assert self.completer is not None
        start = (row, col - len(argument))
        completions = []
        for entry in self.completer.arguments(command, argument):
            value, help_text, reopen = (*entry, False)[:3]
            completions.append(
                Completion(
                    Content.assemble((value, "bold"), ("  ", ""), (help_text, "dim")),
                    value + (" " if reopen else ""),
                    start,
                    (row, col),
                    submit=not reopen,
                    reopen=bool(reopen),
                )
            )
        return completions

    @work(exclusive=True, group="argument-completion")
    async def _complete_later_word(self, command: str, argument: str, start: Location, end: Location) -> None:
        assert self.completer is not None
        entries = await self.completer.later_arguments(command, argument)
        if self.cursor_location != end or self._typed()[1][1:].partition(" ")[2] != argument:
            return  # the user typed on; a newer completion is coming
        completions = [
            Completion(
                Content.assemble((word, "bold"), ("  ", ""), (help_text, "dim")),
                word if reopen else word + " ",
                start,
                end,
                reopen=reopen,
            )
            for word, help_text, reopen in entries
        ]
        self.menu.show(completions, self._typed())

    @work(exclusive=True, group="path-completion")
    async def _complete_paths(self, fragment: str, start: Location, end: Location) -> None:
        if browses_directory(fragment):  # "@", "@src/", "@~/...": list that directory
            names = await asyncio.to_thread(list_path_completions, self.cwd, fragment)
            completions = [Completion(Content(n), n, start, end, reopen=n.endswith("/")) for n in names]
        else:  # "@pgrid": the project's files, fuzzy, best first
            if self._file_index is None or self._file_index.root != self.cwd:
                self._file_index = FileIndex(self.cwd)
            matches = await asyncio.to_thread(self._file_index.search, fragment, MAX_PATH_COMPLETIONS)
            completions = [
                Completion(highlight_match(m), mention_text(m.path), start, end, reopen=m.path.endswith("/"))
                for m in matches
            ]
        if self.cursor_location != end:
            return  # the user typed on; a newer completion is coming
        self.menu.show(completions, self._typed())


class PromptArea(Vertical):
    """The completion menu stacked over the prompt."""

    def __init__(
        self,
        *,
        cwd: Path | None = None,
        completer: PromptCompleter | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.menu = CompletionMenu(id="completion-menu")
        self.input = PromptInput(self.menu, cwd=cwd, completer=completer, id="prompt")

    def compose(self) -> ComposeResult:
        yield self.menu
        yield self.input
